"""Running the server: admission (call limit), graceful shutdown, metrics, latency figures, logs, tracing."""
