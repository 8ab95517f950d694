// The workflow functions the worker registers.
export {};
