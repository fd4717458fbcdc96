#!/usr/bin/env bash
set -e
echo install
