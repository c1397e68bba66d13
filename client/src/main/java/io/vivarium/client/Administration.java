package io.vivarium.client;

import java.nio.charset.StandardCharsets;
import java.util.List;

import io.vivarium.api.FeatureInfo;
import io.vivarium.api.PluginInfo;

import com.fasterxml.jackson.core.type.TypeReference;

/** Daemon-wide administration (the {@code operator} role): features, plugin bundles, metrics. */
public final class Administration {
    private static final String JAR = "application/java-archive";

    private final Http http;

    Administration(Http http) {
        this.http = http;
    }

    @Route("GET /v1/features")
    public List<FeatureInfo> features() {
        return http.json("GET", "/v1/features", null, new TypeReference<List<FeatureInfo>>() { });
    }

    @Route("POST /v1/features/{name}/enable")
    public FeatureInfo enableFeature(String name) {
        return http.json("POST", "/v1/features/" + Http.segment(name) + "/enable", null, FeatureInfo.class);
    }

    @Route("POST /v1/features/{name}/disable")
    public FeatureInfo disableFeature(String name) {
        return http.json("POST", "/v1/features/" + Http.segment(name) + "/disable", null, FeatureInfo.class);
    }

    @Route("GET /v1/plugins")
    public List<PluginInfo> plugins() {
        return http.json("GET", "/v1/plugins", null, new TypeReference<List<PluginInfo>>() { });
    }

    /** Installs and starts a bundle jar. */
    @Route("POST /v1/plugins")
    public PluginInfo installPlugin(byte[] jar) {
        return read(http.bytes("POST", "/v1/plugins", jar, JAR));
    }

    /** Replaces the bundle {@code name} with {@code jar}, live. */
    @Route("PUT /v1/plugins/{name}")
    public PluginInfo updatePlugin(String name, byte[] jar) {
        return read(http.bytes("PUT", "/v1/plugins/" + Http.segment(name), jar, JAR));
    }

    @Route("DELETE /v1/plugins/{name}")
    public void removePlugin(String name) {
        http.noContent("DELETE", "/v1/plugins/" + Http.segment(name));
    }

    /** The Prometheus text exposition of the daemon's metrics. */
    @Route("GET /metrics")
    public String metrics() {
        return new String(http.bytes("GET", "/metrics", null), StandardCharsets.UTF_8);
    }

    private static PluginInfo read(byte[] answer) {
        try {
            return Http.JSON.readValue(answer, PluginInfo.class);
        } catch (java.io.IOException e) {
            throw new VivariumException(0, "the daemon answered what is not a plugin: " + e.getMessage(), null, e);
        }
    }
}
