# ~/.config/fish/config.fish
set -gx EDITOR vim

if status is-interactive
    # The prompt says where we are; the text below is a string, not a marker.
    set -g zylos_banner '# BEGIN ZYLOS MANAGED path'
end
