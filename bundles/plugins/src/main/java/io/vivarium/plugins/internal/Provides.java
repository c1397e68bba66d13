package io.vivarium.plugins.internal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

import io.vivarium.api.PluginService;
import io.vivarium.api.SandboxService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.spi.FingerprintMode;
import io.vivarium.api.spi.SandboxBackend;

/** The Vivarium seams one registered service provides, as {@code GET /v1/plugins} names them. */
final class Provides {
    private Provides() {
    }

    /**
     * @param objectClasses the service's {@code objectClass}
     * @param property its service properties
     * @param apiPrefix the prefix of the service object, asked only for an {@link ApiSurface}
     */
    static List<String> of(Collection<String> objectClasses, Function<String, Object> property, Supplier<String> apiPrefix) {
        List<String> out = new ArrayList<>();
        for (String type : objectClasses) {
            if (type.equals(SandboxBackend.class.getName()) && property.apply(SandboxBackend.NAME_PROPERTY) != null) {
                out.add("backend:" + property.apply(SandboxBackend.NAME_PROPERTY));
            } else if (type.equals(FingerprintMode.class.getName()) && property.apply(FingerprintMode.NAME_PROPERTY) != null) {
                out.add("fingerprint:" + property.apply(FingerprintMode.NAME_PROPERTY));
            } else if (type.equals(ApiSurface.class.getName())) {
                String prefix = apiPrefix.get();
                if (prefix != null) {
                    out.add("api:" + prefix);
                }
            } else if (type.equals(SandboxService.class.getName())) {
                out.add("service:sandboxes");
            } else if (type.equals(PluginService.class.getName())) {
                out.add("service:plugins");
            }
        }
        return out;
    }
}
