#!/usr/bin/env bash
# Simulated LAN for the LAN test tier: a bridge in its own network namespace and N peer
# namespaces wired to it by veth pairs, 10.77.0.(10+i)/24 with a multicast route, so mDNS works
# between them and nothing touches the host namespace. Names start with a caller-chosen prefix
# so concurrent runs never collide.
#   netns.sh up <prefix> <n>     creates <prefix>-br and <prefix>-1 .. <prefix>-<n>
#   netns.sh down <prefix>       deletes every namespace whose name starts with <prefix>-
# Needs root and iproute2.
set -euo pipefail
cmd=${1:?usage: netns.sh up <prefix> <n> | down <prefix>}
prefix=${2:?prefix required}
case "$cmd" in
  up)
    n=${3:?number of peers required}
    br="$prefix-br"
    ip netns add "$br"
    ip -n "$br" link set lo up
    ip -n "$br" link add br0 type bridge
    # No IGMP snooping: multicast must reach every port without joins being tracked.
    ip -n "$br" link set br0 type bridge mcast_snooping 0
    ip -n "$br" link set br0 up
    for i in $(seq 1 "$n"); do
      ns="$prefix-$i"
      ip netns add "$ns"
      ip -n "$ns" link set lo up
      ip -n "$br" link add "vb$i" type veth peer name eth0 netns "$ns"
      ip -n "$br" link set "vb$i" master br0
      ip -n "$br" link set "vb$i" up
      ip -n "$ns" addr add "10.77.0.$((10 + i))/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" route add 224.0.0.0/4 dev eth0
    done
    ;;
  down)
    for ns in $(ip netns list | awk '{print $1}'); do
      case "$ns" in "$prefix"-*) ip netns del "$ns" ;; esac
    done
    ;;
  *)
    echo "unknown command $cmd" >&2
    exit 2
    ;;
esac
