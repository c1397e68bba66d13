package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.vivarium.testkit.Bounded;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code egress} network of procbox, gVisor and QEMU sandboxes on a real daemon, with real networks on this
 * machine: the "internet" is two network namespaces this test makes, each running an HTTP server
 * (never an outside address). From inside a sandbox the allowed server answers and the denied one
 * does not (deny wins), while another sandbox, the host (the daemon's port on the sandbox's
 * gateway) and 169.254.169.254 never do; a sandbox of mode {@code none} reaches nothing; the
 * operator's bounds are a 403, malformed policies a 400; a delete leaves no interface or rule, and
 * after a kill -9 of the daemon a live sandbox keeps its network while the rules of one that died
 * meanwhile go at the next start.
 */
class SandboxNetworkIT {
    private static final String FEATURES = "core,api-v1,procbox,fingerprint-sha256,storage-reflink";
    private static final int ALLOWED_NS = 201;
    private static final int DENIED_NS = 202;
    private static final String FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode())";
    private static final String CONNECT = "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2); print('connected')";

    /** A DNS server of one name, {@code files.test}, on UDP port 53 of argv[1], answering argv[2]; others NXDOMAIN. */
    private static final String DNS_SERVER = """
            import socket, struct, sys
            names = {b"files.test": sys.argv[2]}
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((sys.argv[1], 53))
            while True:
                q, peer = s.recvfrom(512)
                tid = struct.unpack(">H", q[:2])[0]
                i, labels = 12, []
                while q[i]:
                    labels.append(q[i + 1:i + 1 + q[i]])
                    i += q[i] + 1
                qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
                question = q[12:i + 5]
                addr = names.get(b".".join(labels).lower())
                if addr and qtype == 1:
                    answer = b"\\xc0\\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(addr)
                    s.sendto(struct.pack(">HHHHHH", tid, 0x8180, 1, 1, 0, 0) + question + answer, peer)
                else:
                    s.sendto(struct.pack(">HHHHHH", tid, 0x8180 | (0 if addr else 3), 1, 0, 0, 0) + question, peer)
            """;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api api;
    static NetNamespace allowed;
    static NetNamespace denied;
    static final List<Process> servers = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Assumptions.assumeTrue(NetNamespace.available(), NetNamespace.MISSING);
        Assumptions.assumeTrue(java.nio.file.Files.isExecutable(Path.of("/usr/sbin/nft")),
                "needs nftables' nft for sandbox networks (apt-get install nftables)");
        allowed = NetNamespace.create(ALLOWED_NS);
        denied = NetNamespace.create(DENIED_NS);
        for (NetNamespace ns : List.of(allowed, denied)) {
            List<String> cmd = new ArrayList<>(ns.exec());
            cmd.addAll(List.of("python3", "-m", "http.server", "8080", "--bind", ns.address(), "--directory", serve(ns).toString()));
            servers.add(new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
        }
        String features = FEATURES + (Host.gvisorMissing() == null ? ",gvisor" : "")
                + (Host.qemuMissing("python") == null ? ",qemu" : "");
        daemon = daemons.start(dir.resolve("state"), List.of("--features", features), List.of("-Dvivarium.default.backend=procbox", "-Dvivarium.network.allow=10.231.0.0/16",
                "-Dvivarium.network.resolver=" + allowed.address()));
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    /** A directory whose index says which server answered. */
    private static Path serve(NetNamespace ns) throws IOException {
        Path root = java.nio.file.Files.createDirectories(dir.resolve("www-" + ns.name()));
        java.nio.file.Files.writeString(root.resolve("index.html"), "server " + ns.address() + "\n");
        return root;
    }

    @AfterAll
    static void stopServers() throws IOException {
        servers.forEach(Process::destroyForcibly);
        for (NetNamespace ns : new NetNamespace[] {allowed, denied}) {
            if (ns != null) {
                ns.close();
            }
        }
    }

    private static Map<String, Object> egress(List<String> allow, List<String> deny) {
        return Map.of("network", Map.of("mode", "egress", "allow", allow, "deny", deny));
    }

    private static JsonNode python(String id, String script, String... args) throws Exception {
        return python(api, id, script, args);
    }

    private static JsonNode python(Api through, String id, String script, String... args) throws Exception {
        List<String> argv = new ArrayList<>(List.of("python3", "-c", script));
        argv.addAll(List.of(args));
        return Api.expect(200, through.post("/v1/sandboxes/" + id + "/exec", Map.of("args", argv, "timeout_secs", 20)));
    }

    private static boolean reaches(String id, String host, int port) throws Exception {
        return reaches(api, id, host, port);
    }

    private static boolean reaches(Api through, String id, String host, int port) throws Exception {
        return python(through, id, CONNECT, host, Integer.toString(port)).get("exit_code").asInt() == 0;
    }

    @Test
    void anEgressSandboxReachesWhatItsPolicyAllowsAndNothingElse() throws Exception {
        String a = api.createSandbox(egress(List.of(allowed.address() + "/32:8080", "10.231." + DENIED_NS + ".0/24"),
                List.of(denied.address())));
        JsonNode info = Api.expect(200, api.get("/v1/sandboxes/" + a));
        assertEquals("egress", info.get("network").get("mode").asText(), info.toString());
        assertEquals(List.of(allowed.address() + "/32:8080", "10.231." + DENIED_NS + ".0/24"),
                Api.JSON.convertValue(info.get("network").get("allow"), List.class), "kept in canonical form");

        JsonNode fetched = python(a, FETCH, "http://" + allowed.address() + ":8080/");
        assertEquals(0, fetched.get("exit_code").asInt(), fetched.toString());
        assertEquals("server " + allowed.address() + "\n\n", fetched.get("stdout").asText());
        assertFalse(reaches(a, denied.address(), 8080), "deny wins over an allow entry that covers it");
        assertFalse(reaches(a, allowed.address(), 22), "only the port its allow entry names");
        assertEquals("nameserver " + allowed.address() + "\n",
                Api.sh(api, a, "cat /etc/resolv.conf"), "names resolve through the operator's resolver");

        String b = api.createSandbox(egress(List.of("10.231.0.0/16"), List.of()));
        Api.expect(200, api.post("/v1/sandboxes/" + b + "/exec", Map.of("args", List.of("sh", "-c",
                "nohup python3 -m http.server 8000 >/dev/null 2>&1 &"))));
        String bAddress = Api.sh(api, b, "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1").strip();
        assertTrue(bAddress.startsWith("10.213."), bAddress);
        assertTrue(python(b, CONNECT, "127.0.0.1", "8000").get("exit_code").asInt() == 0
                || waitForLocalServer(b), "the other sandbox's own server runs");
        assertFalse(reaches(a, bAddress, 8000), "one sandbox never reaches another");
        String gateway = Api.sh(api, a, "ip route show default | awk '{print $3}'").strip();
        int daemonPort = URI.create(daemon.baseUrl()).getPort();
        assertFalse(reaches(a, gateway, daemonPort), "nor the host: the daemon's port on its gateway");
        assertFalse(reaches(a, "169.254.169.254", 80), "nor a metadata address");

        Api.expect(201, api.post("/v1/sandboxes/" + a + "/branch", Map.of("tag", "net-a")));
        JsonNode child = Api.expect(201, api.post("/v1/sandboxes", Map.of("snapshot_tag", "net-a", "n", 1))).get(0);
        assertEquals(info.get("network"), child.get("network"), "a fork's child has the network of the sandbox branched");
        assertEquals(0, python(child.get("id").asText(), FETCH, "http://" + allowed.address() + ":8080/").get("exit_code").asInt(),
                "and its own interface: it reaches what its parent reaches");
        assertFalse(reaches(child.get("id").asText(), denied.address(), 8080));

        String none = api.createSandbox(Map.of());
        assertEquals("none", Api.expect(200, api.get("/v1/sandboxes/" + none)).get("network").get("mode").asText());
        assertFalse(reaches(none, allowed.address(), 8080), "mode none: loopback only");

        for (String id : List.of(a, b, none, child.get("id").asText())) {
            Api.expect(204, api.delete("/v1/sandboxes/" + id));
        }
        Api.expect(204, api.delete("/v1/snapshots/net-a"));
        for (String id : List.of(a, b, child.get("id").asText())) {
            String hex = hexOf(id);
            assertFalse(run("ip", "-o", "link", "show").contains("vsb" + hex), "the interface of " + id + " is gone");
            assertFalse(run("nft", "list", "ruleset").contains("sb_" + hex), "the rules of " + id + " are gone");
        }
    }

    @Test
    void aGvisorSandboxHasItsPolicyThroughADryRunAColdSleepAndInItsChildrenAndLeavesNothing() throws Exception {
        String missing = Host.gvisorCheckpointsMissing();
        Assumptions.assumeTrue(missing == null, missing);
        // a reboot of the host takes its named namespace, and the veth pair with it; the kernel removes the
        // pair of a namespace deleted only once nothing holds it, which a process in it delays here for certain
        holdsItsPolicyThroughAndLeavesNothing(Map.of("backend", "gvisor"), "10.213.128.", hex -> List.of("sh", "-c",
                "ip netns exec vsb" + hex + " sleep 5 >/dev/null 2>&1 & sleep 0.3 && ip netns delete vsb" + hex));
    }

    @Test
    void aQemuVmHasItsPolicyThroughADryRunAColdSleepAndInItsChildrenAndLeavesNothing() throws Exception {
        String missing = Host.qemuMissing("python");
        Assumptions.assumeTrue(missing == null, missing);
        // a reboot of the host takes its tap
        holdsItsPolicyThroughAndLeavesNothing(Map.of("backend", "qemu", "image", "python"), "10.213.19", hex -> List.of("ip",
                "link", "del", "vsb" + hex));
    }

    /**
     * A sandbox made with {@code made} (a backend, an image) and an egress policy keeps it end to
     * end: the allowed server answers, the denied one and another port do not; the operator's
     * resolver; a server of its own through an exposed port; no path to a procbox sandbox nor from
     * one, nor to the daemon's port on its gateway (in the pool's part starting {@code pool}) or
     * 169.254.169.254; the same after a dry-run (restored in place), after a cold spell during which
     * what a reboot of the host takes went ({@code reboot}: the command that takes it, given the
     * sandbox's hex), and in a child forked from a branch (on a /30 of its own); a delete leaves no
     * interface, chain or namespace.
     */
    private void holdsItsPolicyThroughAndLeavesNothing(Map<String, Object> made, String pool,
            java.util.function.Function<String, List<String>> reboot) throws Exception {
        Map<String, Object> create = new java.util.HashMap<>(egress(List.of(allowed.address() + "/32:8080",
                "10.231." + DENIED_NS + ".0/24"), List.of(denied.address())));
        create.putAll(made);
        String s = api.createSandbox(create);
        JsonNode info = Api.expect(200, api.get("/v1/sandboxes/" + s));
        assertEquals("egress", info.get("network").get("mode").asText(), info.toString());
        JsonNode fetched = python(s, FETCH, "http://" + allowed.address() + ":8080/");
        assertEquals("server " + allowed.address() + "\n\n", fetched.get("stdout").asText(), fetched.toString());
        assertFalse(reaches(s, denied.address(), 8080), "deny wins over an allow entry that covers it");
        assertFalse(reaches(s, allowed.address(), 22), "only the port its allow entry names");
        assertEquals("nameserver " + allowed.address() + "\n", Api.sh(api, s, "cat /etc/resolv.conf"), "the operator's resolver");
        Api.expect(200, api.post("/v1/sandboxes/" + s + "/exec", Map.of("args", List.of("sh", "-c",
                "cd /tmp && echo from-" + made.get("backend") + " > index.html && (python3 -m http.server 8000 >/dev/null 2>&1 &)"))));
        assertTrue(waitForLocalServer(s), "the sandbox's own server runs");
        Api.expect(201, api.post("/v1/sandboxes/" + s + "/ports", Map.of("port", 8000)));
        Api.Response page = api.get("/v1/sandboxes/" + s + "/ports/8000/index.html");
        assertEquals(200, page.status(), page.raw().body());
        assertEquals("from-" + made.get("backend") + "\n", page.raw().body(), "its server, through the exposed port");
        String p = api.createSandbox(egress(List.of("10.231.0.0/16"), List.of()));
        Api.expect(200, api.post("/v1/sandboxes/" + p + "/exec", Map.of("args", List.of("sh", "-c",
                "nohup python3 -m http.server 8000 >/dev/null 2>&1 &"))));
        assertTrue(waitForLocalServer(p), "the procbox sandbox's own server runs");
        String pAddress = Api.sh(api, p, "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1").strip();
        assertFalse(reaches(s, pAddress, 8000), "it never reaches a procbox sandbox");
        String route = "python3 -c \"import socket, struct; print(next(socket.inet_ntoa(struct.pack('<I', int(f.split()[2], 16))) "
                + "for f in open('/proc/net/route') if f.split()[1:2] == ['00000000']))\"";
        String gateway = Api.sh(api, s, route).strip();
        assertTrue(gateway.startsWith(pool), "its backend's part of the pool: " + gateway);
        String own = nextAddress(gateway);
        assertFalse(reaches(p, own, 8000), "nor a procbox sandbox it (at " + own + ")");
        assertFalse(reaches(s, gateway, URI.create(daemon.baseUrl()).getPort()), "nor the host: the daemon's port on its gateway");
        assertFalse(reaches(s, "169.254.169.254", 80), "nor a metadata address");

        JsonNode dry = Api.expect(200, api.post("/v1/sandboxes/" + s + "/dry-run", Map.of("command", "echo x > /work/x",
                "paths", List.of("/work"))));
        assertTrue(dry.get("discarded").asBoolean(), dry.toString());
        assertEquals(0, python(s, FETCH, "http://" + allowed.address() + ":8080/").get("exit_code").asInt(),
                "restored in place after the dry-run (" + dry.get("reverted_via") + "): its network as before");
        assertFalse(reaches(s, denied.address(), 8080));
        Api.Response again = api.get("/v1/sandboxes/" + s + "/ports/8000/index.html");
        assertEquals(200, again.status(), "its port too (gVisor's checkpoint reset the daemon's connection to the server, and "
                + "the next request through the port opens another): " + again.raw().body());

        Map<String, Object> sleeper = new java.util.HashMap<>(create);
        sleeper.put("idle", Map.of("pause_after_secs", 1, "cold_after_secs", 2));
        String cold = api.createSandbox(sleeper);
        api.awaitTier(cold, "cold", java.time.Duration.ofSeconds(90));
        run(reboot.apply(hexOf(cold)).toArray(String[]::new)); // its rules stay until the next start's sweep
        assertEquals(0, python(cold, FETCH, "http://" + allowed.address() + ":8080/").get("exit_code").asInt(),
                "woken from cold, its network made again as a reboot would need it: as before");
        assertFalse(reaches(cold, denied.address(), 8080));

        Api.expect(201, api.post("/v1/sandboxes/" + s + "/branch", Map.of("tag", "net-branch")));
        JsonNode child = Api.expect(201, api.post("/v1/sandboxes", Map.of("snapshot_tag", "net-branch", "n", 1))).get(0);
        String c = child.get("id").asText();
        assertEquals(info.get("network"), child.get("network"), "a fork's child has the network of the sandbox branched");
        assertFalse(Api.sh(api, c, route).strip().equals(gateway), "the child's /30 is its own, not its parent's");
        assertEquals(0, python(c, FETCH, "http://" + allowed.address() + ":8080/").get("exit_code").asInt(),
                "a child restored from the branch reaches what its parent reaches, on its own interface");
        assertFalse(reaches(c, denied.address(), 8080));
        assertEquals(0, python(s, FETCH, "http://" + allowed.address() + ":8080/").get("exit_code").asInt(),
                "and the parent still does");

        for (String id : List.of(s, p, c, cold)) {
            Api.expect(204, api.delete("/v1/sandboxes/" + id));
        }
        Api.expect(204, api.delete("/v1/snapshots/net-branch"));
        for (String id : List.of(s, c, cold)) {
            String hex = hexOf(id);
            assertFalse(run("ip", "-o", "link", "show").contains("vsb" + hex), "the interface of " + id + " is gone");
            assertFalse(run("nft", "list", "ruleset").contains("sb_" + hex), "the rules of " + id + " are gone");
            assertFalse(java.nio.file.Files.exists(Path.of("/run/netns/vsb" + hex)), "the namespace of " + id + " is gone");
        }
    }

    @Test
    void namesResolveThroughTheOperatorsResolver() throws Exception {
        Path script = java.nio.file.Files.writeString(dir.resolve("dns.py"), DNS_SERVER);
        List<String> cmd = new ArrayList<>(allowed.exec());
        cmd.addAll(List.of("python3", script.toString(), allowed.address(), allowed.address()));
        servers.add(new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start());
        String resolve = "import socket, sys; print(socket.gethostbyname(sys.argv[1]))";
        String a = api.createSandbox(egress(List.of(allowed.address() + "/32:8080"), List.of()));
        JsonNode resolved = null;
        for (int i = 0; i < 50 && (resolved == null || resolved.get("exit_code").asInt() != 0); i++) {
            resolved = python(a, resolve, "files.test"); // the resolver may still be starting
        }
        assertEquals(allowed.address() + "\n", resolved.get("stdout").asText(), resolved.toString());
        assertEquals("server " + allowed.address() + "\n\n", python(a, FETCH, "http://files.test:8080/").get("stdout").asText(),
                "a name the resolver knows is reached by name");
        assertTrue(python(a, resolve, "unknown.test").get("exit_code").asInt() != 0, "an unknown name does not resolve");
        String none = api.createSandbox(Map.of());
        assertTrue(python(none, resolve, "files.test").get("exit_code").asInt() != 0, "mode none: no resolver reachable");
        Api.expect(204, api.delete("/v1/sandboxes/" + a));
        Api.expect(204, api.delete("/v1/sandboxes/" + none));
    }

    @Test
    void aSnapshotBuiltWithANetworkDownloadsInItsSetupAndGivesTheNetworkToItsChildren() throws Exception {
        Map<String, Object> network = Map.of("mode", "egress", "allow", List.of(allowed.address() + "/32:8080"), "deny", List.of());
        String fetch = "import urllib.request; open('/work/page', 'wb').write(urllib.request.urlopen('http://"
                + allowed.address() + ":8080/', timeout=5).read())";
        JsonNode built = Api.expect(201, api.post("/v1/snapshots", Map.of("tag", "net-built", "network", network,
                "setup", List.of("python3", "-c", fetch))));
        assertEquals("ready", built.get("status").asText(), built.toString());
        JsonNode child = Api.expect(201, api.post("/v1/sandboxes", Map.of("snapshot_tag", "net-built", "n", 1))).get(0);
        String id = child.get("id").asText();
        assertEquals("egress", child.get("network").get("mode").asText(), child.toString());
        assertEquals("server " + allowed.address() + "\n", Api.sh(api, id, "cat /work/page"), "what the setup downloaded");
        assertTrue(reaches(id, allowed.address(), 8080), "the child reaches what the builder was allowed");
        assertFalse(reaches(id, denied.address(), 8080));
        Api.expect(204, api.delete("/v1/sandboxes/" + id));
        Api.expect(204, api.delete("/v1/snapshots/net-built"));
    }

    @Test
    void aKill9KeepsTheNetworksOfLiveSandboxesAndTheNextStartDropsTheRulesOfThoseThatDied() throws Exception {
        List<String> options = List.of("-Dvivarium.network.allow=10.231.0.0/16");
        Path state = dir.resolve("state-kill9");
        Daemon first = daemons.start(state, List.of(), options);
        Api before = new Api(first.baseUrl(), first.adminToken());
        String live = before.createSandbox(egress(List.of(allowed.address()), List.of()));
        String dies = before.createSandbox(egress(List.of(allowed.address()), List.of()));
        long diesPid = Api.expect(200, before.get("/v1/sandboxes/" + dies)).get("pid").asLong();
        first.kill9();
        ProcessHandle init = ProcessHandle.of(diesPid).orElseThrow();
        init.destroyForcibly();
        init.onExit().get(10, java.util.concurrent.TimeUnit.SECONDS);
        String diesHex = hexOf(dies);
        assertTrue(run("nft", "list", "ruleset").contains("sb_" + diesHex), "the dead sandbox's rules outlived the daemon");

        Daemon second = daemons.start(state, List.of(), options);
        Api after = new Api(second.baseUrl(), second.adminToken());
        assertFalse(run("nft", "list", "ruleset").contains("sb_" + diesHex), "gone at the next start, with its interface");
        assertEquals("egress", Api.expect(200, after.get("/v1/sandboxes/" + live)).get("network").get("mode").asText());
        assertEquals(0, python(after, live, FETCH, "http://" + allowed.address() + ":8080/").get("exit_code").asInt(),
                "the live sandbox's network went on without the daemon");
        assertFalse(reaches(after, live, denied.address(), 8080));
        Api.expect(204, after.delete("/v1/sandboxes/" + live));
        after.delete("/v1/sandboxes/" + dies);
    }

    private static boolean waitForLocalServer(String id) throws Exception {
        for (int i = 0; i < 50; i++) {
            if (python(id, CONNECT, "127.0.0.1", "8000").get("exit_code").asInt() == 0) {
                return true;
            }
            Thread.sleep(100);
        }
        return false;
    }

    @Test
    void aPolicyBeyondTheOperatorsIs403AndAMalformedOneIs400() throws Exception {
        Api.Response wider = api.post("/v1/sandboxes", egress(List.of("0.0.0.0/0"), List.of()));
        assertEquals(403, wider.status());
        assertTrue(wider.error().contains("network_allow") && wider.error().contains("0.0.0.0/0"), wider.error());
        for (Map<String, Object> bad : List.of(egress(List.of("10.231.0.0/33"), List.of()), egress(List.of(), List.of("::1")))) {
            Api.Response r = api.post("/v1/sandboxes", bad);
            assertEquals(400, r.status(), bad + ": " + r.error());
        }
        Api.Response mode = api.outsideTheContract().post("/v1/sandboxes", Map.of("network", Map.of("mode", "bridge")));
        assertEquals(400, mode.status(), mode.error());
        JsonNode backends = Api.expect(200, api.get("/v1/backends"));
        boolean reported = false;
        for (JsonNode b : backends) {
            if (b.get("name").asText().equals("procbox")) {
                reported = b.get("capabilities").toString().contains("network_egress");
            }
        }
        assertTrue(reported, "procbox reports network_egress: " + backends);
        for (JsonNode b : backends) {
            if (List.of("gvisor", "qemu").contains(b.get("name").asText()) && b.get("available").asBoolean()) {
                assertTrue(b.get("capabilities").toString().contains("network_egress"), b.get("name") + " reports network_egress: " + b);
            }
        }
    }

    /** The address after {@code address}: a sandbox's own, after its gateway in its /30. */
    private static String nextAddress(String address) {
        int dot = address.lastIndexOf('.');
        return address.substring(0, dot + 1) + (Integer.parseInt(address.substring(dot + 1)) + 1);
    }

    /** What names a sandbox's interface ({@code vsb...}) and chain ({@code sb_...}): 12 hex digits of its id's SHA-256. */
    private static String hexOf(String id) throws java.security.NoSuchAlgorithmException {
        byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(id.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return java.util.HexFormat.of().formatHex(digest, 0, 6);
    }

    private static String run(String... argv) throws IOException {
        return Bounded.run(java.time.Duration.ofSeconds(20), argv).output();
    }
}
