package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import io.vivarium.api.Capability;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /v1/backends} tells the truth for every shipped backend (procbox, qemu, gvisor and the
 * example vendor backend, all in one daemon): every capability a backend lists works through the
 * API, and every one it does not list is refused with a message naming what is missing (400 for a
 * create field, 501 for an operation, 404 for the VM view of a backend that runs no machines), never
 * a 500. One sandbox per backend serves the operation checks, in an order that ends with stop and
 * start; a backend this host cannot run is skipped with its reason. The capability tables of the docs
 * (every block between {@value #BLOCK_START} and {@value #BLOCK_END} in docs/*.md) say the same as
 * the daemon: a name marked {@code *} is one the backend reports only where the host allows it.
 */
class CapabilitiesIT {
    @RegisterExtension
    static final Daemons daemons = new Daemons();

    private static final List<String> FEATURES = List.of("--features",
            "core,api-v1,procbox,qemu,gvisor,firecracker,cloud-hypervisor,fingerprint-sha256,storage-reflink");
    private static final String VENDOR = "example-local";
    /** Every capability name core knows, in the order their checks run on one sandbox. */
    private static final List<String> OPERATIONS = List.of(Capability.EXEC, Capability.EVAL, Capability.PAUSE,
            Capability.CHECKPOINTS, Capability.DRY_RUN, Capability.BRANCH, Capability.SNAPSHOT, Capability.FORK,
            Capability.STOP_START);
    private static final List<String> CREATE_FIELDS = List.of(Capability.MEMORY_LIMIT, Capability.PIDS_LIMIT,
            Capability.DISK_LIMIT, Capability.VCPUS, Capability.IMAGE, Capability.NETWORK_EGRESS, Capability.HIBERNATE);

    static final String BLOCK_START = "<!-- capabilities -->";
    static final String BLOCK_END = "<!-- /capabilities -->";
    /** A table row: {@code | `name` | yes/no | `cap`, `cap`*, ... |}. */
    private static final java.util.regex.Pattern ROW = java.util.regex.Pattern.compile(
            "^\\|\\s*`([a-z0-9-]+)`\\s*\\|\\s*(yes|no)\\s*\\|(.*)\\|\\s*$");
    private static final java.util.regex.Pattern NAME = java.util.regex.Pattern.compile("`([a-z0-9_]+)`(\\*?)");

    @TempDir
    static Path dir;
    static Api api;
    static final Map<String, JsonNode> BACKENDS = new LinkedHashMap<>();
    /** The sandbox each backend's operation checks share, made by the first of them. */
    static final Map<String, String> SUBJECTS = new HashMap<>();
    static final List<String> TAGS = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        DeployFolder deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy")));
        List<String> args = new ArrayList<>(FEATURES);
        args.addAll(deploy.daemonArgs());
        Daemon daemon = daemons.start(dir.resolve("state"), args);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
        deploy.deploy(DeployFolder.exampleJar("backend"), "example-backend.jar");
        DeployFolder.await(VENDOR + " in /v1/backends", Duration.ofSeconds(30), () -> backends().get(VENDOR));
        BACKENDS.putAll(backends());
    }

    @AfterAll
    static void deleteSnapshots() throws Exception {
        for (String tag : TAGS) {
            api.delete("/v1/snapshots/" + tag + "?cascade=true");
        }
    }

    private static Map<String, JsonNode> backends() throws Exception {
        Map<String, JsonNode> byName = new LinkedHashMap<>();
        for (JsonNode b : api.get("/v1/backends").body()) {
            byName.put(b.get("name").asText(), b);
        }
        return byName;
    }

    @TestFactory
    Stream<DynamicContainer> everyListedCapabilityWorksAndEveryOtherIsRefused() {
        return Stream.of("procbox", "gvisor", "qemu", VENDOR).map(name -> DynamicContainer.dynamicContainer(name,
                Stream.concat(Stream.of(DynamicTest.dynamicTest("create fields", () -> createFields(name))),
                        OPERATIONS.stream().map(c -> DynamicTest.dynamicTest(c, () -> operation(name, c))))));
    }

    /**
     * Where Firecracker cannot run (no KVM that runs guests, no binary: these hosts), it is listed
     * unavailable saying what is missing, with the API document it is held to, and a create on it is
     * a 503 that says the same. Where it can, the capability table's row is checked like the others'.
     */
    @Test
    void firecrackerSaysWhyItCannotRunHere() throws Exception {
        JsonNode fc = BACKENDS.get("firecracker");
        assertTrue(fc != null, "the firecracker feature's backend is listed: " + BACKENDS.keySet());
        assertTrue(fc.get("details").get("api").asText().startsWith("Firecracker API 1.17"), fc.toString());
        assertTrue(capabilities(fc).containsAll(Set.of(Capability.CHECKPOINTS, Capability.DRY_RUN)),
                "its bundle registers the checkpoints seam, whether or not it runs here: " + fc);
        Assumptions.assumeFalse(fc.get("available").asBoolean(), "firecracker runs on this host: its table row is checked");
        String reason = fc.get("reason").asText();
        assertTrue(reason.contains("firecracker is missing") || reason.contains("KVM") || reason.contains("guest image"),
                reason);
        Api.Response create = api.post("/v1/sandboxes", Map.of("backend", "firecracker"));
        assertEquals(503, create.status(), create.raw().body());
        assertTrue(create.body().get("error").asText().contains(reason), create.raw().body());
    }

    /**
     * Cloud Hypervisor runs plain VMs: {@code POST /v1/sandboxes} naming it is a 400 saying to use
     * {@code /v1/vms}, wherever it runs; where it cannot run (these hosts), {@code /v1/vms} answers 503
     * with what is missing.
     */
    @Test
    void cloudHypervisorMakesVmsAloneAndSaysWhyItCannotRunHere() throws Exception {
        JsonNode ch = BACKENDS.get("cloud-hypervisor");
        assertTrue(ch != null, "the cloud-hypervisor feature's backend is listed: " + BACKENDS.keySet());
        assertTrue(ch.get("machine").asBoolean(), ch.toString());
        assertTrue(ch.get("details").get("api").asText().startsWith("Cloud Hypervisor API 0.3.0"), ch.toString());
        assertTrue(capabilities(ch).contains(Capability.CHECKPOINTS), "its bundle registers the checkpoints seam: " + ch);
        Api.Response sandbox = api.post("/v1/sandboxes", Map.of("backend", "cloud-hypervisor"));
        assertEquals(400, sandbox.status(), sandbox.raw().body());
        assertEquals("backend cloud-hypervisor runs plain virtual machines, not sandboxes: create them with POST /v1/vms",
                sandbox.body().get("error").asText());
        Assumptions.assumeFalse(ch.get("available").asBoolean(), "cloud-hypervisor runs on this host: its table row is checked");
        Api.Response vm = api.post("/v1/vms", Map.of("backend", "cloud-hypervisor"));
        assertEquals(503, vm.status(), vm.raw().body());
        assertTrue(vm.body().get("error").asText().contains(ch.get("reason").asText()), vm.raw().body());
    }

    @TestFactory
    Stream<DynamicTest> theDocsCapabilityTablesSayWhatTheBackendsReport() throws Exception {
        List<DynamicTest> checks = new ArrayList<>();
        try (Stream<Path> docs = Files.list(Path.of("..", "docs"))) {
            for (Path doc : docs.filter(p -> p.toString().endsWith(".md")).sorted().toList()) {
                boolean in = false;
                int n = 0;
                for (String line : Files.readAllLines(doc)) {
                    n++;
                    if (line.strip().equals(BLOCK_START)) {
                        in = true;
                    } else if (line.strip().equals(BLOCK_END)) {
                        in = false;
                    } else if (in) {
                        java.util.regex.Matcher row = ROW.matcher(line);
                        if (row.matches()) {
                            String where = doc.getFileName() + ":" + n;
                            checks.add(DynamicTest.dynamicTest(where + " " + row.group(1),
                                    () -> documentedRow(where, row.group(1), row.group(2).equals("yes"), row.group(3))));
                        }
                    }
                }
            }
        }
        assertTrue(checks.size() >= 4, "the docs have capability tables with a row per shipped backend: " + checks.size());
        return checks.stream();
    }

    private static void documentedRow(String where, String name, boolean machine, String listed) {
        JsonNode backend = available(name);
        Set<String> always = new TreeSet<>();
        Set<String> whereAllowed = new TreeSet<>();
        java.util.regex.Matcher m = NAME.matcher(listed);
        while (m.find()) {
            (m.group(2).isEmpty() ? always : whereAllowed).add(m.group(1));
        }
        Set<String> reported = capabilities(backend);
        assertEquals(machine, backend.get("machine").asBoolean(), where + ": machine");
        assertTrue(reported.containsAll(always), where + " lists " + always + ", the daemon reports " + reported);
        Set<String> extra = new TreeSet<>(reported);
        extra.removeAll(always);
        extra.removeAll(whereAllowed);
        assertTrue(extra.isEmpty(), where + " does not list " + extra + ", which the daemon reports");
    }

    private static JsonNode available(String name) {
        JsonNode b = BACKENDS.get(name);
        Assumptions.assumeTrue(b != null, name + " is not installed");
        Assumptions.assumeTrue(b.get("available").asBoolean(), () -> name + " cannot run on this host: "
                + b.get("reason").asText());
        return b;
    }

    private static Set<String> capabilities(JsonNode backend) {
        Set<String> names = new TreeSet<>();
        backend.get("capabilities").forEach(n -> names.add(n.asText()));
        return names;
    }

    /** Reported create fields all at once on one create (one VM boot); each unreported one alone: a 400 naming it. */
    private static void createFields(String name) throws Exception {
        JsonNode backend = available(name);
        Set<String> caps = capabilities(backend);
        Map<String, Object> fields = new LinkedHashMap<>(Map.of("backend", name));
        for (String field : CREATE_FIELDS) {
            Map<String, Object> one = Map.of(requestField(field), requestValue(field));
            if (caps.contains(field)) {
                fields.putAll(one);
            } else {
                Map<String, Object> refused = new LinkedHashMap<>(one);
                refused.put("backend", name);
                Api.Response r = api.post("/v1/sandboxes", refused);
                assertEquals(400, r.status(), name + " does not list " + field + ": " + r.body());
                assertTrue(r.error().contains(requestField(field)), r.error());
            }
        }
        String id = api.createSandbox(fields);
        JsonNode info = api.get("/v1/sandboxes/" + id).body();
        assertEquals("running", info.get("status").asText(), info.toString());
        if (caps.contains(Capability.MEMORY_LIMIT)) {
            assertEquals(256, info.get("memory_limit_mib").asInt(), info.toString());
        }
        if (caps.contains(Capability.VCPUS)) {
            assertEquals(1, info.get("vcpus").asInt(), info.toString());
        }
        assertEquals(204, api.delete("/v1/sandboxes/" + id).status());
    }

    private static String requestField(String capability) {
        return switch (capability) {
            case Capability.MEMORY_LIMIT -> "memory_limit_mib";
            case Capability.PIDS_LIMIT -> "pids_limit";
            case Capability.DISK_LIMIT -> "disk_limit_mib";
            case Capability.VCPUS -> "vcpus";
            case Capability.IMAGE -> "image";
            case Capability.NETWORK_EGRESS -> "network";
            case Capability.HIBERNATE -> "idle";
            default -> throw new IllegalArgumentException(capability);
        };
    }

    private static Object requestValue(String capability) {
        return switch (capability) {
            case Capability.MEMORY_LIMIT -> 256;
            case Capability.PIDS_LIMIT -> 128;
            case Capability.DISK_LIMIT -> 64;
            case Capability.VCPUS -> 1;
            case Capability.IMAGE -> "default";
            case Capability.NETWORK_EGRESS -> Map.of("mode", "egress", "allow", List.of()); // no operator's network_allow here
            case Capability.HIBERNATE -> Map.of("cold_after_secs", 600);
            default -> throw new IllegalArgumentException(capability);
        };
    }

    /**
     * The sandbox a backend's operation checks share; on a backend that starts sandboxes from named
     * images, from the one with Python (the test images CI builds: default, python, qemu-ga), so that
     * eval meets an interpreter.
     */
    private static String subject(String name) throws Exception {
        String id = SUBJECTS.get(name);
        if (id == null) {
            Map<String, Object> fields = new LinkedHashMap<>(Map.of("backend", name));
            if (capabilities(BACKENDS.get(name)).contains(Capability.IMAGE)) {
                fields.put("image", "python");
            }
            id = api.createSandbox(fields);
            SUBJECTS.put(name, id);
        }
        return id;
    }

    private static void operation(String name, String capability) throws Exception {
        JsonNode backend = available(name);
        boolean listed = capabilities(backend).contains(capability);
        boolean machine = backend.get("machine").asBoolean();
        assertEquals(machine, capabilities(backend).contains(Capability.VCPUS), "vcpus is what a machine has");
        String id = subject(name);
        String sb = "/v1/sandboxes/" + id;
        String work = api.get(sb).body().get("workspace").asText();
        String tag = (name + "-" + capability).replace('_', '-');
        switch (capability) {
            case Capability.EXEC -> {
                if (listed) {
                    assertEquals("ok\n", api.exec(id, "echo", "ok").get("stdout").asText());
                    assertEquals(204, api.sendBytes("PUT", sb + "/files?path=" + work + "/f", "x".getBytes()).status());
                    assertEquals(200, api.post(sb + "/ping", null).status());
                } else {
                    refused(api.post(sb + "/exec", Map.of("args", List.of("true"))), 501, "exec");
                }
            }
            case Capability.EVAL -> {
                Api.Response r = api.post(sb + "/eval", Map.of("code", "6 * 7"));
                if (listed) {
                    assertEquals(200, r.status(), "a backend that lists eval evaluates, never a 422: " + r.body());
                    assertEquals("42", r.body().get("result").asText(), r.body().toString());
                } else {
                    refused(r, 501, "interpreter");
                }
            }
            case Capability.PAUSE -> {
                Api.Response r = api.post(sb + "/pause", null);
                if (listed) {
                    assertEquals("paused", ok(r).get("status").asText());
                    assertEquals("running", ok(api.post(sb + "/resume", null)).get("status").asText());
                    assertEquals("ok\n", api.exec(id, "echo", "ok").get("stdout").asText());
                } else {
                    refused(r, 501, "pause");
                }
            }
            case Capability.CHECKPOINTS -> {
                Api.Response r = api.post(sb + "/checkpoints", Map.of("tag", "c1"));
                if (listed) {
                    assertEquals("c1", created(r).get("tag").asText());
                    JsonNode list = ok(api.get(sb + "/checkpoints"));
                    assertEquals(1, list.size(), list.toString());
                    assertEquals("running", ok(api.post(sb + "/checkpoints/c1/restore", null)).get("status").asText());
                    assertEquals(204, api.delete(sb + "/checkpoints/c1").status());
                    assertEquals(0, ok(api.get(sb + "/checkpoints")).size());
                } else {
                    refused(r, 501, "checkpoint");
                    refused(api.get(sb + "/checkpoints"), 501, "checkpoint");
                }
            }
            case Capability.DRY_RUN -> {
                Api.Response r = api.post(sb + "/dry-run", Map.of("command", "echo dry > " + work + "/dry", "paths",
                        List.of(work)));
                if (listed) {
                    JsonNode body = ok(r);
                    assertTrue(body.get("discarded").asBoolean(), body.toString());
                    assertEquals(work + "/dry", body.get("changes").get("added").get(0).asText(), body.toString());
                    assertEquals(1, api.exec(id, "test", "-e", work + "/dry").get("exit_code").asInt(), "discarded");
                } else {
                    refused(r, 501, "dry-run");
                }
            }
            case Capability.BRANCH -> {
                Api.Response r = api.post(sb + "/branch", Map.of("tag", tag));
                if (listed) {
                    TAGS.add(tag);
                    assertEquals(tag, created(r).get("tag").asText());
                } else {
                    refused(r, 501, "snapshot");
                }
            }
            case Capability.SNAPSHOT -> {
                Api.Response r = api.post("/v1/snapshots", Map.of("tag", tag, "backend", name));
                if (listed) {
                    TAGS.add(tag);
                    assertEquals(name, created(r).get("backend").asText());
                } else {
                    refused(r, 501, "snapshot");
                }
            }
            case Capability.FORK -> {
                Assumptions.assumeTrue(listed, () -> name + " has no images seam, so no snapshot of it to fork "
                        + "(snapshot and branch, refused above, come from the same seam)");
                String from = (name + "-" + Capability.BRANCH).replace('_', '-');
                Api.Response r = api.post("/v1/sandboxes", Map.of("snapshot_tag", from, "n", 1));
                JsonNode children = created(r);
                assertEquals(1, children.size(), children.toString());
                String child = children.get(0).get("id").asText();
                assertEquals("ok\n", api.exec(child, "echo", "ok").get("stdout").asText());
                assertEquals(204, api.delete("/v1/sandboxes/" + child).status());
            }
            case Capability.STOP_START -> {
                Api.Response r = api.post("/v1/vms/" + id + "/stop", null);
                if (listed) {
                    assertEquals("stopped", ok(r).get("status").asText());
                    assertEquals("running", ok(api.post("/v1/vms/" + id + "/start", null)).get("status").asText());
                    assertEquals("ok\n", api.exec(id, "echo", "ok").get("stdout").asText());
                } else if (machine) {
                    refused(r, 501, "stop");
                } else {
                    refused(r, 404, "process sandbox");
                }
            }
            default -> throw new IllegalArgumentException(capability);
        }
    }

    private static JsonNode ok(Api.Response r) {
        assertEquals(200, r.status(), String.valueOf(r.body()));
        return r.body();
    }

    private static JsonNode created(Api.Response r) {
        assertEquals(201, r.status(), String.valueOf(r.body()));
        return r.body();
    }

    private static void refused(Api.Response r, int status, String naming) {
        assertEquals(status, r.status(), String.valueOf(r.body()));
        assertTrue(r.error().contains(naming), "the refusal says what is missing: " + r.error());
    }
}
