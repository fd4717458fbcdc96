alias ll="ls -l"

# zylos-managed: bin PATH
export PATH="/home/z/zylos/bin:$PATH"
export EDITOR=vi
cat > /tmp/x <<EOF
# zylos-managed: bin PATH
EOF
