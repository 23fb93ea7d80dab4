/** A registered OTLP trace pipeline; `shutdown` flushes the spans still batched, then stops it. */
export interface OtlpTracing {
  shutdown(): Promise<void>;
}

/**
 * Registers the global OpenTelemetry tracer provider of a CLI process with an OTLP/HTTP (JSON)
 * trace exporter behind a BatchSpanProcessor, when env `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; `undefined` (nothing registered) otherwise.
 * The exporter reads its endpoint, headers and timeout from the standard `OTEL_EXPORTER_OTLP_*`
 * variables (spans go to `<endpoint>/v1/traces`; https://opentelemetry.io/docs/specs/otel/protocol/exporter/).
 * Call before the worker or producer is created, and `shutdown()` before the process exits.
 */
export async function startOtlpTracing(env: NodeJS.ProcessEnv = process.env): Promise<OtlpTracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  // Loaded only when tracing is on: the SDK and the OTLP transformer add start-up time to every command.
  const [{ OTLPTraceExporter }, { BatchSpanProcessor, NodeTracerProvider }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/sdk-trace-node'),
  ]);
  const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  // Also sets the AsyncLocalStorage context manager and the W3C propagator BullMQ's spans use.
  provider.register();
  return {
    shutdown: async () => {
      try {
        await provider.shutdown();
      } catch {
        // A collector that is gone must not change the command's exit code.
      }
    },
  };
}
