# /etc/profile.d/peach2.sh: login shells get /etc/peach2/environment (see that file).
if [ -r /etc/peach2/environment ]; then
  while IFS= read -r peach2_line; do
    case $peach2_line in
      '#'* | '') ;;
      root:*=*) [ "$(id -u)" = 0 ] && export "${peach2_line#root:}" ;;
      *=*) export "$peach2_line" ;;
    esac
  done </etc/peach2/environment
  unset peach2_line
fi
