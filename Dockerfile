# aiosched: the scheduler service, its embedded cluster and benchmarks (no dev tools).
#   docker build -t aiosched .
#   docker run --rm aiosched --help
# compose.yaml builds this image and runs it against k3s, tracing into Jaeger.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# A virtualenv is one directory to copy into the runtime image, with nothing of the build.
RUN python -m venv /opt/aiosched
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler/ scheduler/
COPY profiles/ profiles/
COPY observability/ observability/
COPY kubesim/ kubesim/
COPY bench/ bench/
COPY apimachinery/ apimachinery/
RUN /opt/aiosched/bin/pip install .

FROM python:3.11-slim
ENV PATH=/opt/aiosched/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/aiosched /opt/aiosched
RUN useradd --system --user-group --uid 10001 --no-create-home --home-dir /nonexistent aiosched
USER 10001:10001
WORKDIR /tmp
# The secure port, as kube-scheduler's: HTTPS; /healthz, /livez, /readyz open; /metrics and /debug
# for bearer tokens the API server allows (aiosched run --http-address, or --bind-address and
# --secure-port).
EXPOSE 10259
ENTRYPOINT ["aiosched"]
# In a pod: in-cluster config, upstream's default profile, endpoints reachable from the kubelet.
# deploy/kubernetes runs it with its own command line.
CMD ["run", "--http-address", "0.0.0.0:10259"]
