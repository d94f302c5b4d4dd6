// Preloaded (`node --import`) into the servers `npm start` runs: their IPC channel to scripts/start.mjs
// closes when that process ends, however it ends (even SIGKILL), and then they stop as on SIGTERM.
if (process.channel) {
  process.channel.unref(); // the channel alone must not keep a server's process alive
  process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
