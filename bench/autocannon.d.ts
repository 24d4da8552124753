// autocannon ships no types; this declares the part of its API the benchmarks use.
declare module 'autocannon' {
  namespace autocannon {
    /** What the HTTP parser reports once a response's head is in: `headers` is a flat [name, value, ...] list. */
    interface ResponseHead {
      statusCode: number;
      headers: string[];
    }

    /** One connection of a run. */
    interface Client {
      on(event: 'headers', listener: (head: ResponseHead) => void): this;
    }

    interface Options {
      url: string;
      method?: 'GET' | 'POST';
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      setupClient?: (client: Client) => void;
    }

    interface Result {
      errors: number;
      timeouts: number;
      non2xx: number;
      /** Seconds. */
      duration: number;
    }

    /** A running benchmark; awaiting it gives the result. */
    interface Instance extends PromiseLike<Result> {
      on(
        event: 'response',
        listener: (client: Client, statusCode: number, resBytes: number, responseTimeMs: number) => void,
      ): this;
      stop(): void;
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance;
  export = autocannon;
}
