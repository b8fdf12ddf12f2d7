#!/bin/sh
# As the official image's docker/start-ui-server.sh at v2.56.4: the UI server as PID 1, reading
# ./config/docker.yaml, which it renders from the environment itself (`# enable-template`).
set -eu
exec ./ui-server --env docker start
