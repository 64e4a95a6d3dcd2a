# The agent's image: slim Python, git for fetching, a non-root user, `gitops-agent` as entry.
# Build:  docker build -t gitops-agent:0.1.0 .
#   or, with no registry and no Docker engine:  make image  (scripts/image.py: the same image from
#   Debian's packages; tests/unit/test_image_spec.py keeps the two saying the same things)
#
# Pinned: the base image by digest, every Python dependency by version and hash
# (requirements.lock, made with pip-tools: `make lock`), installed with --require-hashes.
# The digest is python:3.11.10-slim-bookworm's as recorded in the Renovate-maintained
# github.com/nalabelle/build, images/digests.Dockerfile (the machine this was written on cannot
# reach a registry to read it); check or refresh it with
#   docker buildx imagetools inspect python:3.11.10-slim-bookworm
FROM python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16

RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY agent ./agent
# The project itself: no dependencies (all came from the lock) and no build-time downloads.
RUN pip install --no-cache-dir --no-deps --no-build-isolation . && rm -rf /root/.cache

# The cache directory belongs to the user: without a volume there (deploy/ mounts an emptyDir) the
# agent can still write its Git mirrors. scripts/image.py (make image) does the same.
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin agent \
 && install -d -o 10001 -g 10001 -m 0755 /var/cache/gitops-agent
USER 10001
# MALLOC_ARENA_MAX: fewer glibc malloc arenas for the agent's threads (docs/operations.md, Memory).
ENV GITOPS_AGENT_CACHE_DIR=/var/cache/gitops-agent \
    HOME=/home/agent \
    MALLOC_ARENA_MAX=2 \
    PYTHONUNBUFFERED=1

ENTRYPOINT ["gitops-agent"]
CMD ["--help"]
