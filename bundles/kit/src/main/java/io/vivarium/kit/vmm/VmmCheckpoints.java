package io.vivarium.kit.vmm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.files.FileClones;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A VMM backend's checkpoints, for a driver that is also {@link VmmSnapshots}: each a directory
 * {@code checkpoints/TAG} in the sandbox's directory with the state the VMM saved of the paused
 * guest (whole, or only what changed since the checkpoint this VMM process last took or was
 * restored from, written onto a copy of it), a copy of the workspace disk taken in the same pause (a
 * reflink where the filesystem clones) and {@value #INFO}, whose mode says both ({@code diff+reflink}). Staged as {@code .TAG.staging} and renamed into place last, so a
 * daemon killed meanwhile leaves the whole checkpoint or none. A restore relaunches: the VMM is
 * ended, the disk replaced by a fresh copy of the checkpoint's, and a new VMM loads the state, which
 * the kit's adoption finds through the pid file even from the state before the restore. A VMM loads
 * only what its own version saved, so a checkpoint taken under another version is refused. The
 * backend bundle registers a component that extends it as the backend's {@link Checkpoints}.
 *
 * @since 1.1
 */
public abstract class VmmCheckpoints implements Checkpoints {

    private static final String DIR = "checkpoints";
    private static final String INFO = "checkpoint.json";
    private static final String STAGING_SUFFIX = ".staging";
    private static final FileClones CLONES = new FileClones();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final VmmRuntime runtime;

    /** @throws IllegalArgumentException if the runtime's driver is not {@link VmmSnapshots} */
    protected VmmCheckpoints(VmmRuntime runtime) {
        if (runtime.launcher().snapshots().isEmpty()) {
            throw new IllegalArgumentException("the VMM driver saves no guest state (it is no VmmSnapshots)");
        }
        this.runtime = runtime;
    }

    private static Path dir(VmmInstance instance) {
        return instance.spec().dir().resolve(DIR);
    }

    @Override
    public CheckpointInfo create(SandboxInstance sandbox, String tag, OperationContext context) {
        VmmInstance instance = runtime.instances().own(sandbox);
        if (!instance.alive()) {
            throw ApiException.conflict("sandbox " + instance.id() + " is " + instance.status().name().toLowerCase()
                    + " (" + instance.reason() + "): start it before taking a checkpoint");
        }
        Path target = dir(instance).resolve(tag);
        if (Files.exists(target)) {
            throw ApiException.conflict("sandbox " + instance.id() + " already has a checkpoint " + tag + "; choose another tag");
        }
        Path staging = dir(instance).resolve("." + tag + STAGING_SUFFIX);
        try {
            FileClones.deleteTree(staging);
            Files.createDirectories(staging);
            String[] disk = new String[1];
            context.checkpoint("saving the state of sandbox " + instance.id());
            String kind = runtime.launcher().save(instance, staging, () -> disk[0] = CLONES.cloneOrCopy(
                    instance.spec().dir().resolve(VmmLauncher.WORKSPACE), staging.resolve(VmmLauncher.WORKSPACE),
                    () -> HostCommand.timeFor(context.remaining())));
            Map<String, Object> info = new LinkedHashMap<>();
            info.put("created", Instant.now().getEpochSecond());
            info.put("mode", kind + "+" + disk[0]);
            info.put("vmm", vmmVersion());
            AtomicFiles.write(staging.resolve(INFO), JSON.writeValueAsBytes(info));
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            instance.base(target);
            return info(target);
        } catch (IOException e) {
            deleteQuietly(staging);
            throw ApiException.internal("cannot checkpoint sandbox " + instance.id() + " as " + tag + ": "
                    + e.getMessage(), e);
        }
    }

    /** By relaunch: the VMM before ends, a new one loads the checkpoint's state onto a copy of its disk. */
    @Override
    public SandboxInstance restore(SandboxInstance sandbox, String tag, OperationContext context) {
        VmmInstance instance = runtime.instances().own(sandbox);
        Path checkpoint = dir(instance).resolve(tag);
        if (!Files.isDirectory(checkpoint)) {
            throw ApiException.notFound("sandbox " + instance.id() + " has no checkpoint " + tag);
        }
        String takenWith = read(instance, checkpoint).path("vmm").asText("");
        String now = vmmVersion();
        if (!takenWith.equals(now)) {
            throw ApiException.conflict("checkpoint " + tag + " was taken with " + (takenWith.isEmpty() ? "an unknown version"
                    : takenWith) + " and a VMM loads only the state its own version saved; this daemon runs " + now
                    + ": take it again");
        }
        InstanceSpec spec = instance.spec();
        instance.close();
        runtime.launcher().end(spec, instance.state());
        try {
            context.checkpoint("copying the disk of checkpoint " + tag + " of sandbox " + spec.id());
            Path disk = spec.dir().resolve(VmmLauncher.WORKSPACE);
            Path fresh = spec.dir().resolve(VmmLauncher.WORKSPACE + ".restoring");
            Files.deleteIfExists(fresh);
            CLONES.cloneOrCopy(checkpoint.resolve(VmmLauncher.WORKSPACE), fresh, () -> HostCommand.timeFor(context.remaining()));
            Files.move(fresh, disk, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return runtime.instances().put(runtime.launcher().load(spec, checkpoint, context));
        } catch (IOException | ApiException e) {
            throw new ApiException(500, "restoring sandbox " + spec.id() + " to checkpoint " + tag + " failed after its "
                    + "VMM was ended, so it has none now (restore again, or delete it): " + e.getMessage());
        }
    }

    @Override
    public boolean delete(SandboxInstance sandbox, String tag) {
        VmmInstance instance = runtime.instances().own(sandbox);
        Path checkpoint = dir(instance).resolve(tag);
        if (!Files.isDirectory(checkpoint)) {
            return false;
        }
        try {
            FileClones.deleteTree(checkpoint);
        } catch (IOException e) {
            throw ApiException.internal("cannot delete checkpoint " + tag + " of sandbox " + instance.id() + ": "
                    + e.getMessage(), e);
        }
        return true;
    }

    @Override
    public List<CheckpointInfo> list(SandboxInstance sandbox) {
        VmmInstance instance = runtime.instances().own(sandbox);
        Path dir = dir(instance);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<CheckpointInfo> all = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(dir)) {
            for (Path d : dirs.filter(d -> !d.getFileName().toString().startsWith(".")).toList()) {
                all.add(info(d));
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot list the checkpoints of sandbox " + instance.id() + ": " + e.getMessage(), e);
        }
        all.sort(Comparator.comparingLong(CheckpointInfo::createdAtUnix).thenComparing(CheckpointInfo::tag));
        return all;
    }

    /** The first line the VMM's executable prints for {@code --version}, or what says it could not be asked. */
    private String vmmVersion() {
        return runtime.details().getOrDefault("version", "an unknown version");
    }

    private static JsonNode read(VmmInstance instance, Path checkpoint) {
        try {
            return JSON.readTree(checkpoint.resolve(INFO).toFile());
        } catch (IOException e) {
            throw ApiException.conflict("checkpoint " + checkpoint.getFileName() + " of sandbox " + instance.id()
                    + " is unreadable (" + e.getMessage() + "): delete it");
        }
    }

    private static CheckpointInfo info(Path checkpoint) throws IOException {
        JsonNode info = JSON.readTree(checkpoint.resolve(INFO).toFile());
        long size = 0;
        try (Stream<Path> files = Files.list(checkpoint)) {
            for (Path file : files.toList()) {
                size += Files.size(file);
            }
        }
        return new CheckpointInfo(checkpoint.getFileName().toString(), info.path("created").asLong(), size,
                info.path("mode").asText());
    }

    private static void deleteQuietly(Path path) {
        try {
            FileClones.deleteTree(path);
        } catch (IOException e) {
            System.getLogger(VmmCheckpoints.class.getName()).log(System.Logger.Level.WARNING,
                    "cannot delete " + path + ": " + e.getMessage());
        }
    }
}
