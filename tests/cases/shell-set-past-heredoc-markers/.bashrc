cat <<'EOF'
# BEGIN ZYLOS MANAGED hooks
not a marker
# END ZYLOS MANAGED hooks
EOF
cat <<-EOT
	# BEGIN ZYLOS MANAGED hooks
	EOT
export AFTER=1
