/**
 * Exit statuses that mean "do not restart me": a supervisor (`serve`, a Kubernetes pod's logs) can
 * tell a start-up refusal from a crash. EXIT_LISTEN_FAILED lives with the listeners (src/http/listen.ts).
 */

/** A configured default model or detector cannot be served (src/model-server/serving-plan.ts). */
export const EXIT_DEFAULTS_UNSERVABLE = 4;
