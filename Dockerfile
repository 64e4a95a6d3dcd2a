# The agent's image: slim Python, git for fetching, a non-root user, `python -m agent` as entry.
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY agent ./agent
RUN pip install --no-cache-dir . && rm -rf /root/.cache

RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin agent
USER 10001
ENV GITOPS_AGENT_CACHE_DIR=/var/cache/gitops-agent \
    HOME=/home/agent \
    PYTHONUNBUFFERED=1

ENTRYPOINT ["python", "-m", "agent"]
CMD ["--help"]
