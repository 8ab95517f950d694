/**
 * Calls `stop` on the first SIGINT or SIGTERM. A Ctrl-C reaches a process that npm started twice (npm
 * relays the terminal's SIGINT to its child, which also gets it from the terminal): a repeat within a
 * second is that echo and is ignored; a later one means "stop now" and calls `force`.
 */
export function onStopSignals(stop: (signal: NodeJS.Signals) => void, force: (signal: NodeJS.Signals) => void): void {
  let firstSignalAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstSignalAt === undefined) {
      firstSignalAt = Date.now();
      stop(signal);
    } else if (Date.now() - firstSignalAt >= 1_000) {
      force(signal);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
