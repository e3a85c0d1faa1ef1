# The surge image for `surge k8s job --image`: one static Go binary on a
# distroless base, run as a non-root user. Build from the repository root:
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t REGISTRY/surge:TAG .
#   docker push REGISTRY/surge:TAG
#
# The manifests give the container only args (`burst --file …`, `worker …`),
# so the entrypoint must be surge itself. The pods run as the user below
# (the manifests' securityContext says the same uid and makes the results
# volume writable to it with fsGroup).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/surge ./cmd/surge

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/surge /usr/local/bin/surge
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/surge"]
