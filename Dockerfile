# stampede's container image: the binary on a small glibc base, run as a non-root user.
#   docker build -t registry.example.com/stampede:0.1.0 .
#   docker push registry.example.com/stampede:0.1.0
# Without a daemon or registry (what the test suite does), .ci/kube/image makes an OCI archive
# from a built binary; docs/kubernetes.md shows both ways.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --bin stampede && strip target/release/stampede

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/stampede /usr/local/bin/stampede
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/stampede"]
