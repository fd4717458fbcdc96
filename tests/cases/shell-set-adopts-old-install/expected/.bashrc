alias ll="ls -l"

# BEGIN ZYLOS MANAGED bin-path hash=20f9a43af95e
export PATH="$HOME/zylos/bin:$PATH"
# END ZYLOS MANAGED bin-path
export EDITOR=vi
cat > /tmp/x <<EOF
# zylos-managed: bin PATH
EOF
