export { loadConfig, configDocs, ConfigError, type Config } from './config.js';
export { VARS, type VarSpec, type VarName } from './spec.js';
