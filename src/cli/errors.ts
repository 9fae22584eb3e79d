/** A refusal the CLI reports as `Error: ...` with exit status 1. */
export class CliError extends Error {}
