package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.vivarium.api.BackendInfo;
import io.vivarium.api.PluginInfo;
import io.vivarium.api.PluginService;
import io.vivarium.api.SandboxService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.spi.FingerprintMode;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.Bundle;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.wiring.BundleWiring;

/**
 * An update through the {@link PluginService} (what {@code PUT /v1/plugins/{name}} does) replaces
 * procbox alone: every other bundle keeps its id, state and wiring, and every service it registers
 * keeps its service id.
 */
@RunWith(PaxExam.class)
public class PluginServiceUpdateIT extends VivariumOsgiTestSupport {

    private static final String NEW_VERSION = "0.1.0.viaplugins";

    @Test
    public void updatingProcboxThroughThePluginServiceRestartsNothingElse() throws Exception {
        PluginService plugins = awaitService(PluginService.class, null);
        SandboxService sandboxes = awaitService(SandboxService.class, null);
        awaitService(ApiSurface.class, null);
        awaitService(FingerprintMode.class, "(vivarium.fingerprint=sha256)");
        awaitService(FingerprintMode.class, "(vivarium.fingerprint=stat)");
        await("core lists procbox", () -> procboxVersion(sandboxes) != null, sandboxes::backends);
        Bundle procbox = bundle(ProcboxBuilds.PROCBOX_BUNDLE);
        Map<String, List<Object>> before = everyBundleBut(procbox);

        PluginInfo updated = plugins.update(procbox.getSymbolicName(),
                ProcboxBuilds.withVersion(ProcboxBuilds.shippedJar(procbox), NEW_VERSION));

        assertEquals(NEW_VERSION, updated.version());
        assertEquals("an update keeps the bundle", procbox.getBundleId(), updated.id());
        assertEquals("active", updated.state());
        await("core lists procbox " + NEW_VERSION, () -> NEW_VERSION.equals(procboxVersion(sandboxes)),
                sandboxes::backends);
        assertEquals("every other bundle's id, state, wiring and service ids", before, everyBundleBut(procbox));
    }

    /** "id name" → state, wiring (compared by identity: a refresh replaces it) and the ids of its services. */
    private Map<String, List<Object>> everyBundleBut(Bundle except) {
        Map<String, List<Object>> m = new TreeMap<>();
        for (Bundle b : context().getBundles()) {
            if (b.getBundleId() != except.getBundleId()) {
                ServiceReference<?>[] refs = b.getRegisteredServices();
                List<Long> serviceIds = refs == null ? List.of()
                        : Arrays.stream(refs).map(r -> (Long) r.getProperty(Constants.SERVICE_ID)).sorted().toList();
                m.put(b.getBundleId() + " " + b.getSymbolicName(),
                        Arrays.asList(b.getState(), b.adapt(BundleWiring.class), serviceIds));
            }
        }
        return m;
    }

    private static String procboxVersion(SandboxService sandboxes) {
        return sandboxes.backends().stream().filter(b -> b.name().equals("procbox")).map(BackendInfo::version)
                .findFirst().orElse(null);
    }
}
