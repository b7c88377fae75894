// What the softphone's status line says when a call fails or ends: the server's own reason (an agent that
// could not start, the model's error), the server stopping or going away, or who hung up.

// What the operator reads when a call failed: the server's reason, and where to look next.
export function failureMessage(detail) {
  const reason = detail.replace(/^agent failed to start:\s*/, '');
  if (reason !== detail) {
    return `The call failed: the agent could not start (${reason}). The caller heard an apology. `
      + 'Check the model settings voicebot serve was started with (--model, VOICEBOT_MODEL, credentials) and its log.';
  }
  return `The call failed: ${detail}. The caller heard an apology; the server log has the details.`;
}

// How a call that had started ended, from what is known so far: the server's error note, its wrap-up,
// the feed's `ended` event and the socket's close code (these may arrive in any order).
export function endMessage(stats) {
  if (stats.failure) return failureMessage(stats.failure);
  const code = stats.closeCode;
  if (code === 1006) {
    return 'The connection to the server was lost (code 1006): the server stopped suddenly or the network dropped. '
      + 'The call is over; the calls page shows what was recorded.';
  }
  if (stats.wrapUp || code === 1001 || code === 1012 || (stats.endedBy === 'server' && /restart|shut/i.test(stats.endReason || ''))) {
    return `The server stopped and ended the call${stats.wrapUp ? ` (${stats.wrapUp})` : ''}: it is shutting down or restarting. Call again once it is back.`;
  }
  const who = { agent: 'the bot hung up', caller: 'you hung up', server: 'the server ended it' }[stats.endedBy];
  const reason = stats.endReason && stats.endedBy !== 'caller' ? `: ${stats.endReason}` : '';
  if (who) return `Call ended: ${who}${reason}.`;
  return code === 1000 || code === 1005 || code === null ? 'Call ended' : `Call ended (socket closed with code ${code})`;
}

export class ServerUnreachable extends Error {
  constructor() {
    super(`Cannot reach the server at ${location.host}: is voicebot serve running? Start it, then call again.`);
  }
}
