/** Progress of an upload: bytes sent so far of the whole (undefined while the size is unknown). */
export interface UploadProgress {
  sent: number;
  total: number | undefined;
}

export type OnProgress = (progress: UploadProgress) => void;

/** Reports bytes as they go, never backwards past what the service acknowledged. */
export class ProgressMeter {
  #sent = 0;
  constructor(
    private readonly total: number | undefined,
    private readonly report: OnProgress | undefined,
  ) {}

  /** The service holds this many bytes (a resumed upload starts there; a failed request falls back to it). */
  at(offset: number): void {
    if (offset === this.#sent && offset !== 0) return;
    this.#sent = offset;
    this.report?.({ sent: offset, total: this.total });
  }

  /** Every byte is in: the whole, or all that a stream of unknown size gave. */
  finish(): void {
    this.at(this.total ?? this.#sent);
  }

  add(count: number): void {
    this.#sent += count;
    this.report?.({ sent: this.total === undefined ? this.#sent : Math.min(this.total, this.#sent), total: this.total });
  }
}
