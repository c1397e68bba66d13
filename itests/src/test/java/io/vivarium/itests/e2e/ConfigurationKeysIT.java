package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The configuration keys operators write (underscores, as in features/*.json, the README and
 * docs/qemu.md) change what the components do, seen through the API of the assembled daemon:
 * {@code .cfg} files in its deploy folder (FileInstall → Configuration Admin) set one key or more
 * of each configured component, and each shows in a create or in {@code GET /v1/backends}. (By the
 * Declarative Services naming rule a method {@code default_backend()} would read the key
 * {@code default.backend}, and these keys would be ignored without a word.) The qemu backend is
 * configured so that it stays unavailable: no VM is booted and its executable is never run.
 */
class ConfigurationKeysIT {
    private static final String EXAMPLE = "example-local";
    private static final Duration APPLIED = Duration.ofSeconds(30);

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path dir;
    static Api api;

    @BeforeAll
    static void start() throws Exception {
        DeployFolder deploy = new DeployFolder(Files.createDirectories(dir.resolve("deploy")));
        Path fakeQemu = Files.writeString(dir.resolve("fake-qemu-system"), "#!/bin/sh\nexit 1\n");
        Files.setPosixFilePermissions(fakeQemu, PosixFilePermissions.fromString("rwxr-xr-x"));
        writeCfg(deploy, "io.vivarium.core.internal.SandboxManager", "default_backend=" + EXAMPLE);
        writeCfg(deploy, "io.vivarium.backend.procbox", "sandbox_uid=4321", "sandbox_gid=4322", "sandbox_pool_size=3");
        writeCfg(deploy, "io.vivarium.backend.qemu", "qemu_path=" + fakeQemu, "image_dir=" + dir.resolve("images"));
        writeCfg(deploy, "io.vivarium.storage.qcow2", "qemu_img_path=" + dir.resolve("no-qemu-img"));
        deploy.deploy(DeployFolder.exampleJar("backend"), "example-backend.jar");
        List<String> args = new ArrayList<>(List.of("--features", "core,api-v1,procbox,qemu,fingerprint-sha256"));
        args.addAll(deploy.daemonArgs());
        Daemon daemon = daemons.start(dir.resolve("state"), args);
        api = new Api(daemon.baseUrl(), daemon.adminToken());
    }

    /** A {@code PID.cfg} with {@code key=value} lines, written atomically through the deploy folder. */
    private static void writeCfg(DeployFolder deploy, String pid, String... lines) throws Exception {
        Path tmp = Files.write(dir.resolve(pid + ".cfg"), List.of(lines));
        deploy.deploy(tmp, pid + ".cfg");
    }

    @Test
    void coreDefaultBackendChoosesTheBackendOfACreateThatNamesNone() throws Exception {
        // with procbox and the example backend both there, a create naming none is a 400 unless the default is read
        DeployFolder.await("procbox and " + EXAMPLE + " in /v1/backends", APPLIED,
                () -> backend("procbox") != null && backend(EXAMPLE) != null ? true : null);
        JsonNode created = DeployFolder.await("a create naming no backend to use " + EXAMPLE, APPLIED, () -> {
            // a 400 before the configuration is applied, a 404 or 503 while core restarts with it
            Api.Response r = api.post("/v1/sandboxes", Map.of());
            return r.status() == 201 ? r.body() : null;
        });
        assertEquals(EXAMPLE, created.get("backend").asText(), created.toString());
    }

    @Test
    void procboxSandboxUidAndGidAreTheUserItRunsSandboxesAs() throws Exception {
        Assumptions.assumeTrue(Files.getAttribute(dir, "unix:uid").equals(0),
                "procbox uses sandbox_uid and sandbox_gid only when the daemon runs as root");
        String user = DeployFolder.await("procbox's sandbox_user to be uid 4321, gid 4322", APPLIED, () -> {
            JsonNode procbox = backend("procbox");
            String u = procbox == null ? null : procbox.path("details").path("sandbox_user").asText();
            return "uid 4321, gid 4322".equals(u) ? u : null;
        });
        assertEquals("uid 4321, gid 4322", user);
    }

    @Test
    void procboxSandboxPoolSizeIsTheBoundOfItsPool() throws Exception {
        String pool = DeployFolder.await("procbox's sandbox_pool to hold up to 3", APPLIED, () -> {
            JsonNode procbox = backend("procbox");
            String p = procbox == null ? null : procbox.path("details").path("sandbox_pool").asText();
            return p != null && p.startsWith("up to 3 sandboxes") ? p : null;
        });
        assertTrue(pool.startsWith("up to 3 sandboxes"), pool);
    }

    @Test
    void qemuPathAndImageDirAreTheOnesTheBackendChecks() throws Exception {
        String images = dir.resolve("images").toString();
        // qemu_path is an executable, so the first check that fails is the image's, in image_dir (qemu_img_path
        // is qcow2's, checked when a disk is made: a create, which this test does not get to)
        JsonNode qemu = DeployFolder.await("qemu unavailable for want of an image in " + images, APPLIED, () -> {
            JsonNode b = backend("qemu");
            return b != null && b.path("reason").asText().startsWith("no guest image default in " + images) ? b : null;
        });
        assertEquals(false, qemu.get("available").asBoolean(), qemu.toString());
        assertEquals(images, qemu.path("details").path("images").asText(), qemu.toString());
    }

    /** The backend's entry in {@code GET /v1/backends}; null while core restarts with its new configuration. */
    private static JsonNode backend(String name) throws Exception {
        Api.Response r = api.get("/v1/backends");
        if (r.status() != 200) {
            return null;
        }
        for (JsonNode b : r.body()) {
            if (b.get("name").asText().equals(name)) {
                return b;
            }
        }
        return null;
    }
}
