package io.vivarium.cli.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.BackendInfo;
import io.vivarium.api.FeatureInfo;
import io.vivarium.api.PluginInfo;
import io.vivarium.api.PluginService;
import io.vivarium.api.SandboxService;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConsoleCommandsTest {
    @TempDir
    Path dir;

    private final List<String> calls = new ArrayList<>();
    private final PluginService plugins = new PluginService() {
        @Override
        public List<PluginInfo> plugins() {
            return List.of(new PluginInfo(7, "io.vivarium.backend-procbox", "0.1.0", "active", "file:x",
                    List.of("backend:procbox"), "procbox"));
        }

        @Override
        public PluginInfo install(byte[] jar) {
            calls.add("install " + jar.length);
            return new PluginInfo(9, "x.y", "1.0.0", "active", "vivarium:plugin:x.y", List.of(), null);
        }

        @Override
        public PluginInfo update(String symbolicName, byte[] jar) {
            throw ApiException.notFound("no bundle " + symbolicName);
        }

        @Override
        public void uninstall(String symbolicName) {
            calls.add("uninstall " + symbolicName);
        }

        @Override
        public List<FeatureInfo> features() {
            return List.of(new FeatureInfo("procbox", "process sandboxes", true, List.of()));
        }

        @Override
        public FeatureInfo enable(String feature) {
            return new FeatureInfo(feature, "", true, List.of());
        }

        @Override
        public FeatureInfo disable(String feature) {
            return new FeatureInfo(feature, "", false, List.of());
        }
    };
    private final ConsoleCommands commands = new ConsoleCommands(plugins, backends(List.of(
            new BackendInfo("qemu", "io.vivarium.backend-qemu", "0.1.0", List.of("checkpoints", "exec", "vcpus"), true,
                    true, null, 2, Map.of()),
            new BackendInfo("procbox", "io.vivarium.backend-procbox", "0.1.0", List.of(), false, false,
                    "bwrap is not installed", 0, Map.of()))));

    /** A sandbox service that only lists backends. */
    private static SandboxService backends(List<BackendInfo> infos) {
        return (SandboxService) Proxy.newProxyInstance(SandboxService.class.getClassLoader(),
                new Class<?>[] { SandboxService.class }, (proxy, method, args) -> {
                    if (method.getName().equals("backends")) {
                        return infos;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    @Test
    void listsInAlignedColumns() {
        String[] lines = commands.plugins().split("\n");
        assertTrue(lines[0].startsWith("ID  STATE   BUNDLE"), lines[0]);
        assertTrue(lines[1].contains("io.vivarium.backend-procbox") && lines[1].endsWith("backend:procbox"), lines[1]);
        assertTrue(commands.features("list").contains("procbox  yes"));
    }

    @Test
    void backendsShowTheirCapabilityNamesAndWhetherTheyRunMachines() {
        String[] lines = commands.backends().split("\n");
        assertEquals("BACKEND  AVAILABLE  MACHINE  VERSION  SANDBOXES  CAPABILITIES            REASON", lines[0]);
        assertEquals("qemu     yes        yes      0.1.0    2          checkpoints,exec,vcpus  -", lines[1]);
        assertEquals("procbox  no         no       0.1.0    0          -                       bwrap is not installed", lines[2]);
    }

    @Test
    void installsFromAFileAndReportsErrorsAsText() throws Exception {
        Path jar = Files.write(dir.resolve("p.jar"), new byte[] { 1, 2, 3 });
        assertEquals("installed x.y 1.0.0 (bundle 9, active)", commands.plugins("install", jar.toString()));
        assertEquals(List.of("install 3"), calls);
        assertEquals("error (404): no bundle nope", commands.plugins("update", "nope", jar.toString()));
        assertTrue(commands.plugins("install", dir.resolve("missing.jar").toString()).startsWith("error (400): cannot read"));
        assertEquals("removed a.b", commands.plugins("remove", "a.b"));
        assertEquals(ConsoleCommands.PLUGINS_USAGE, commands.plugins("frobnicate", "x"));
        assertEquals("disabled procbox", commands.features("disable", "procbox"));
    }
}
