#!/usr/bin/env bash
# The fleet at scale (issue 39, README "Fleet: 5,000 nodes, simulated"): one
# process (internal/fleetsim) serves N simulated sandboxpin exporters, one
# target a node, 1 % of them broken in known ways, and kube-state-metrics'
# kube_node_info; a real Prometheus server (scripts/deps.sh only
# build_prometheus) scrapes them at the PodMonitor's interval and evaluates
# the shipped PrometheusRule's groups. After the rules' for: it reports, for
# each size: whether the firing alerts are exactly the broken nodes' (by
# node and alert name), the rule group's evaluation time, the scrape
# duration, and Prometheus' resident memory.
#
#   bash scripts/fleet-sim.sh              # SIZES="500 5000", WAIT=17m each
#   SIZES=5000 WAIT=17m bash scripts/fleet-sim.sh
#
# Everything listens on 127.0.0.1. It exits non-zero when the alerts differ.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
SIZES=${SIZES:-"500 5000"}
# The rules' for: is 15m; two more evaluations for the firing state.
WAIT=${WAIT:-17m}
export SANDBOXPIN_CACHE=${SANDBOXPIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxpin}
version=$(sed -n 's/^PROMETHEUS_VERSION=//p' scripts/deps.sh)
prometheus=$SANDBOXPIN_CACHE/prometheus/$version/prometheus
[ -x "$prometheus" ] || bash scripts/deps.sh only build_prometheus
# The PodMonitor's interval and timeout, as the operator writes them.
interval=$(sed -n 's/^ *interval: *//p' deploy/kubernetes/podmonitor.yaml)
timeout=$(sed -n 's/^ *scrapeTimeout: *//p' deploy/kubernetes/podmonitor.yaml)

for c in curl jq; do command -v "$c" >/dev/null || { echo "fleet-sim.sh needs $c (apt-get install $c)" >&2; exit 1; }; done

work=$(mktemp -d)
pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
(cd internal && go build -o "$work/fleetsim" ./fleetsim)

# query PROM EXPR: the value of the one-element vector EXPR.
query() {
	curl -fsS --get "http://$1/api/v1/query" --data-urlencode "query=$2" | jq -r '.data.result[0].value[1]'
}

rc=0
printf '| nodes | broken | alerts firing as expected | rule group evaluation | scrape duration (avg / max) | Prometheus RSS |\n|---|---|---|---|---|---|\n' >"$work/table.md"
for n in $SIZES; do
	dir=$work/$n
	mkdir -p "$dir/data"
	"$work/fleetsim" -nodes "$n" -captures deploy/testdata/audit -rules deploy/kubernetes/prometheusrule.yaml -out "$dir" >"$dir/addr" 2>"$dir/fleetsim.log" &
	pids+=("$!")
	for _ in $(seq 50); do [ -s "$dir/addr" ] && break; sleep 0.1; done
	addr=$(cat "$dir/addr")
	cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: $interval
  scrape_timeout: $timeout
  evaluation_interval: $interval
rule_files: [rules.yaml]
scrape_configs:
  - job_name: sandboxpin/sandboxpin
    file_sd_configs: [{files: [targets.json]}]
  - job_name: kube-state-metrics
    honor_labels: true
    metrics_path: /ksm/metrics
    static_configs: [{targets: ["$addr"]}]
EOF
	port=$((19090 + n % 1000))
	"$prometheus" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
		--web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
	prom_pid=$!
	pids+=("$prom_pid")
	echo "== $n nodes: fleetsim on $addr, Prometheus on 127.0.0.1:$port (pid $prom_pid); waiting $WAIT"
	sleep "$WAIT"
	p=127.0.0.1:$port
	# The firing alerts, "node alertname" sorted, against the expected ones.
	curl -fsS --get "http://$p/api/v1/query" --data-urlencode 'query=ALERTS{alertstate="firing"}' |
		jq -r '.data.result[] | "\(.metric.node) \(.metric.alertname)"' | sort >"$dir/firing"
	jq -r 'to_entries[] | .key as $n | .value[] | "\($n) \(.)"' "$dir/expected.json" | sort >"$dir/expected"
	broken=$(jq 'length' "$dir/expected.json")
	if diff -u "$dir/expected" "$dir/firing" >"$dir/alerts.diff"; then
		ok="yes ($(wc -l <"$dir/firing") alerts on $broken nodes)"
	else
		ok="NO (see below)"
		rc=1
		echo "alerts differ for $n nodes (expected, firing):"
		head -40 "$dir/alerts.diff"
	fi
	evaluation=$(curl -fsS "http://$p/api/v1/rules" | jq -r '[.data.groups[] | select(.name == "sandboxpin") | .evaluationTime] | first | . * 1000 | "\(. * 100 | round / 100) ms"')
	scrape=$(query "$p" 'avg(scrape_duration_seconds{job="sandboxpin/sandboxpin"}) * 1000' | awk '{printf "%.2f ms", $1}')
	scrape_max=$(query "$p" 'max(scrape_duration_seconds{job="sandboxpin/sandboxpin"}) * 1000' | awk '{printf "%.2f ms", $1}')
	rss=$(awk '/^VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$prom_pid/status")
	targets=$(curl -fsS "http://$p/api/v1/targets?state=active" | jq '[.data.activeTargets[] | select(.labels.job == "sandboxpin/sandboxpin")] | length')
	printf '| %s | %s | %s | %s | %s / %s | %s |\n' "$n" "$broken" "$ok" "$evaluation" "$scrape" "$scrape_max" "$rss" >>"$work/table.md"
	echo "   $targets targets; firing: $(wc -l <"$dir/firing"); evaluation $evaluation; scrape $scrape / $scrape_max; RSS $rss"
	kill "$prom_pid" "${pids[-2]}" 2>/dev/null || true
done
echo
echo "Prometheus $("$prometheus" --version 2>&1 | head -1 | awk '{print $3}'), scrape interval $interval, $(nproc) cores; $(date -u +%F):"
cat "$work/table.md"
cd "$top"
exit "$rc"
