package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET|PUT /v1/sandboxes/{id}/files?path=...} on procbox sandboxes: raw bytes both ways, atomic
 * writes as the sandbox user, the status codes, tenancy and roles, and symlinks that point at host
 * files leading nowhere but inside the sandbox.
 */
class SandboxFilesIT {
    /** SandboxService.MAX_FILE_BYTES */
    private static final int MAX_FILE_BYTES = 64 << 20;

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Daemon daemon;
    static Api admin;
    static Api user;
    static Api otherTenant;
    static String id;

    @BeforeAll
    static void start() throws Exception {
        Assumptions.assumeTrue(Host.canRunProcbox(), Host.PROCBOX_REASON);
        Path tokens = dir.resolve("tokens.txt");
        Files.writeString(tokens, "acme-admin acme admin\nacme-user acme user\nglobex-admin globex admin\n");
        daemon = daemons.start(dir.resolve("state"), List.of("--token-file", tokens.toString()));
        admin = new Api(daemon.baseUrl(), "acme-admin");
        user = admin.as("acme-user");
        otherTenant = admin.as("globex-admin");
        id = admin.createSandbox();
    }


    private static String files(String path) {
        return "/v1/sandboxes/" + id + "/files?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8);
    }

    private static HttpResponse<byte[]> put(Api api, String path, byte[] content) throws Exception {
        return api.raw("PUT", files(path), content);
    }

    private static HttpResponse<byte[]> get(Api api, String path) throws Exception {
        return api.raw("GET", files(path), null);
    }

    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    @Test
    void aFileWrittenIsReadBackByteForByteAndOverwritten() throws Exception {
        byte[] content = new byte[300_000];
        new Random(7).nextBytes(content);
        content[0] = 0;
        content[content.length - 1] = 0;
        assertEquals(204, put(admin, "/work/data.bin", content).statusCode());
        HttpResponse<byte[]> read = get(admin, "/work/data.bin");
        assertEquals(200, read.statusCode(), text(read));
        assertEquals("application/octet-stream", read.headers().firstValue("Content-Type").orElse(""));
        assertArrayEquals(content, read.body());
        assertEquals("65534 300000", Api.sh(admin, id, "stat -c '%u %s' /work/data.bin").strip(),
                "written by the sandbox user, whole");

        byte[] shorter = { 'n', 0, 'w', '\n' };
        assertEquals(204, put(admin, "/work/data.bin", shorter).statusCode());
        assertArrayEquals(shorter, get(admin, "/work/data.bin").body());
        assertEquals("", Api.sh(admin, id, "ls -A /work | grep vivarium-write || true"), "no temporary file left");

        assertEquals(204, put(admin, "/tmp/empty", new byte[0]).statusCode());
        assertArrayEquals(new byte[0], get(admin, "/tmp/empty").body());
    }

    @Test
    void missingTooLargeAndBadPathsAreClientErrors() throws Exception {
        assertEquals(404, get(admin, "/work/nothing-here").statusCode());
        assertEquals(404, put(admin, "/work/no/such/dir/f", new byte[] { 1 }).statusCode());
        for (boolean expectContinue : new boolean[] { false, true }) {
            HttpResponse<byte[]> big = admin.raw("PUT", files("/work/big"), new byte[MAX_FILE_BYTES + 1], expectContinue);
            assertEquals(413, big.statusCode(), "expect 100-continue: " + expectContinue);
            assertTrue(text(big).contains("\"error\""), text(big));
        }
        assertEquals("", Api.sh(admin, id, "ls /work/big 2>/dev/null || true"));
        for (String bad : List.of("work/relative", "/work/../etc/passwd", "/work/a\nb", "/work", "/", "/work/")) {
            HttpResponse<byte[]> r = get(admin, bad);
            assertEquals(400, r.statusCode(), bad + ": " + text(r));
            assertTrue(text(r).contains("\"error\""), text(r));
            assertEquals(400, put(admin, bad, new byte[] { 1 }).statusCode(), bad);
        }
        assertEquals(400, admin.outsideTheContract().raw("GET", "/v1/sandboxes/" + id + "/files", null).statusCode(), "no path");
    }

    @Test
    void onlyAnAdminOfTheSandboxesTenantReachesItsFiles() throws Exception {
        assertEquals(204, put(admin, "/work/mine.txt", "mine".getBytes(StandardCharsets.UTF_8)).statusCode());
        assertEquals(404, get(otherTenant, "/work/mine.txt").statusCode());
        assertEquals(404, put(otherTenant, "/work/mine.txt", new byte[] { 1 }).statusCode());
        assertEquals(403, get(user, "/work/mine.txt").statusCode());
        assertEquals(403, put(user, "/work/mine.txt", new byte[] { 1 }).statusCode());
        assertArrayEquals("mine".getBytes(StandardCharsets.UTF_8), get(admin, "/work/mine.txt").body());
    }

    @Test
    void aSymlinkToAHostFileNeverReachesTheHost() throws Exception {
        Path hostDir = Files.createDirectories(dir.resolve("host-only"));
        Path secret = Files.writeString(hostDir.resolve("secret.txt"), "host secret\n");
        Api.sh(admin, id, "ln -s '" + secret + "' /work/to-secret && ln -s '" + hostDir + "' /work/to-host-dir"
                + " && ln -s /work/mine-target /work/inside && echo inside > /work/mine-target");

        HttpResponse<byte[]> read = get(admin, "/work/to-secret");
        assertEquals(404, read.statusCode(), "resolved inside the sandbox, where that path does not exist: " + text(read));
        assertFalse(text(read).contains("host secret"));
        assertEquals(404, get(admin, "/work/to-host-dir/secret.txt").statusCode());

        assertEquals(204, put(admin, "/work/to-secret", "overwritten".getBytes(StandardCharsets.UTF_8)).statusCode());
        assertEquals("host secret\n", Files.readString(secret), "the host file is untouched");
        assertEquals("regular file", Api.sh(admin, id, "stat -c %F /work/to-secret").strip(),
                "the write replaced the link itself, inside the workspace");
        assertEquals(404, put(admin, "/work/to-host-dir/new.txt", new byte[] { 1 }).statusCode());
        assertFalse(Files.exists(hostDir.resolve("new.txt")));
        try (var listing = Files.list(hostDir)) {
            assertEquals(1, listing.count(), "nothing was written into the host directory");
        }

        assertEquals("inside\n", text(get(admin, "/work/inside")), "a link within the sandbox resolves as it does there");
    }
}
