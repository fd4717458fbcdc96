export A=1
# >>> conda initialize >>>
export CONDA=1
# <<< conda initialize <<<
