#!/usr/bin/env bash
# BEGIN ZYLOS MANAGED env hash=51a8050bc66a
export ZYLOS=1
# END ZYLOS MANAGED env
set -e
echo install
