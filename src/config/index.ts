export { loadConfig, configDocs, ConfigError, type Config } from './config.js';
export { assertStartupConfig, startupProblems, type Surface } from './production.js';
export { VARS, CLIENT_VARS, type VarSpec, type VarName } from './spec.js';
