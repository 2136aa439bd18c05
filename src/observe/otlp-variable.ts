/**
 * Which of an OTLP exporter setting's two variables is in effect: the traces one,
 * OTEL_EXPORTER_OTLP_TRACES_<suffix>, when it is set, else the general OTEL_EXPORTER_OTLP_<suffix>
 * (each setting on its own, as the OpenTelemetry specification has it). `value` gives a variable's
 * value, undefined when it is unset.
 */
export function otlpVariable(value: (name: string) => string | undefined, suffix: string): string {
  const traces = `OTEL_EXPORTER_OTLP_TRACES_${suffix}`;
  return value(traces) !== undefined ? traces : `OTEL_EXPORTER_OTLP_${suffix}`;
}
