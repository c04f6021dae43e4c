// The repo's Collector, for both tiers of the pipeline. The agents (collector-config/agent.yaml):
// OTLP in, memory_limiter and batch, spans out through contrib's loadbalancing exporter (routing
// by trace id), metrics out through OTLP; the file_storage extension keeps the exporters' sending
// queues on disk across a restart. The gateways (collector-config/gateway.yaml): tail_sampling,
// the spanmetrics connector, the prometheus exporter, attributes (the pipeline test's stamp).
// Jaeger v2.12's own binary (Collector v0.139) served as the gateway before; its tail sampler
// drops the traces it holds undecided when it stops, even on SIGTERM. From contrib v0.141.0 it
// decides them (drop_pending_traces_on_shutdown: false, the default).
// Every module is at one Collector release: core v0.161.0, stable modules v1.67.0, contrib
// v0.161.0, the release at which the module proxy serves the tail sampler with its neighbours.
// Not v0.139.0: its loadbalancing exporter hands its own component id to the OTLP factory, which
// refuses it (contrib issue 43950, fixed in v0.140.1). The old type names (`otlp`,
// `spanmetrics`) are aliases of `otlp_grpc` and `span_metrics` here.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/loadbalancingexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/attributesprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	// The Collector's own logs and metrics (service::telemetry); required since v0.140.
	factories := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	var err error
	if factories.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](
		filestorage.NewFactory(),
	); err != nil {
		return factories, err
	}
	if factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](
		otlpreceiver.NewFactory(),
	); err != nil {
		return factories, err
	}
	if factories.Processors, err = otelcol.MakeFactoryMap[processor.Factory](
		memorylimiterprocessor.NewFactory(),
		batchprocessor.NewFactory(),
		tailsamplingprocessor.NewFactory(),
		attributesprocessor.NewFactory(),
	); err != nil {
		return factories, err
	}
	if factories.Connectors, err = otelcol.MakeFactoryMap[connector.Factory](
		spanmetricsconnector.NewFactory(),
	); err != nil {
		return factories, err
	}
	factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		loadbalancingexporter.NewFactory(),
		otlpexporter.NewFactory(),
		debugexporter.NewFactory(),
		prometheusexporter.NewFactory(),
	)
	return factories, err
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol-toolcalls",
			Description: "otel_toolcalls pipeline Collector (agents: loadbalancing, file_storage; gateways: tail_sampling, spanmetrics, prometheus)",
			Version:     "0.161.0",
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(),
					envprovider.NewFactory(),
				},
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
