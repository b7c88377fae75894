# voicebot server image. Build: docker build -t voicebot .   Run: docker run --env-file .env -p 8080:8080 voicebot
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VOICEBOT_HOST=0.0.0.0 \
    VOICEBOT_PORT=8080 \
    VOICEBOT_LOG_FORMAT=json

WORKDIR /app
COPY pyproject.toml README.md ./
COPY telephony ./telephony
COPY agent ./agent
RUN pip install --no-cache-dir . \
    && useradd --create-home --uid 10001 voicebot
USER voicebot

EXPOSE 8080
# SIGTERM drains calls (VOICEBOT_SHUTDOWN_GRACE, then a goodbye); give the orchestrator's stop timeout room for it.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=3s \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/health').status != 200)"
CMD ["voicebot", "serve"]
