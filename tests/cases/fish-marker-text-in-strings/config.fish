set -gx EDITOR vim
echo 'it\'s
# BEGIN ZYLOS MANAGED path
not a marker'
set msg "line one
# END ZYLOS MANAGED path"
set files (ls \
# BEGIN ZYLOS MANAGED path
)
cat <<EOF
function greet
    # BEGIN ZYLOS MANAGED greet
    echo hi
    # END ZYLOS MANAGED greet
end
echo done # BEGIN ZYLOS MANAGED inline
