/**
 * What a record handler throws to hand its record back to the bus undone, to be delivered again
 * later (here or to another member): the worker is stopping, or the record's partition was lost.
 * The bus hands back a record on any rejection (event-bus.ts); this says the rejection is meant,
 * not a failure to publish the record's outcome.
 */
export class HandBack extends Error {
  override readonly name = 'HandBack';

  /** `reason`, when given, is appended to the message ("handed back: <reason>"). */
  constructor(reason?: string) {
    super(reason ? `handed back: ${reason}` : 'handed back');
  }
}

export function isHandBack(error: unknown): error is HandBack {
  return error instanceof HandBack;
}
