cat <<'EOF'
# BEGIN ZYLOS MANAGED hooks
not a marker
# END ZYLOS MANAGED hooks
EOF
cat <<-EOT
	# BEGIN ZYLOS MANAGED hooks
	EOT
export AFTER=1
# BEGIN ZYLOS MANAGED hooks hash=9fa7609211af
export Z=1
# END ZYLOS MANAGED hooks
