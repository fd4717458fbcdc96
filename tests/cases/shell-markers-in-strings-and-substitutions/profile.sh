a='
# BEGIN ZYLOS MANAGED x
'
b="
# END ZYLOS MANAGED x
"
c=$(
# BEGIN ZYLOS MANAGED y
echo hi
)
d=`echo "
# BEGIN ZYLOS MANAGED z
"`
e=${UNSET:-
# END ZYLOS MANAGED z
}
f=${x#y}
echo ok # BEGIN ZYLOS MANAGED after-code
