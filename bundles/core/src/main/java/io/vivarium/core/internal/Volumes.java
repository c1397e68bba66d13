package io.vivarium.core.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.VolumeInfo;
import io.vivarium.api.VolumeMount;
import io.vivarium.api.VolumeService;
import io.vivarium.api.spi.AttachedVolume;
import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StaleRevisionException;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.Stored;
import io.vivarium.api.state.Transaction;
import io.vivarium.common.mounts.MountTable;

/**
 * The volumes of this host (docs/volumes.md): their records in the state store, their file
 * systems under {@code <state>/volumes/}, and which sandboxes mount them. A volume is mounted once,
 * at {@code <state>/volume-mounts/<key>}, while any sandbox uses it, and bound for each sandbox at
 * {@link SandboxDirs#volumesOf}. Who uses what is rebuilt from the sandboxes' records at start; attaching, detaching
 * and deleting take this object's lock, so a volume never gets two writers nor is deleted in use.
 */
final class Volumes {
    private static final System.Logger LOG = System.getLogger(Volumes.class.getName());
    private static final String IMAGE_SUFFIX = ".ext4";

    private final Sandboxes sandboxes;
    private final HostVolumes host;
    private final Path images;
    private final Path mounts;
    /** The keys of the volumes whose file systems are being made ({@link #create}). */
    private final Set<String> making = new HashSet<>();
    /** By volume key: the sandboxes that mount it, and how. */
    private final Map<String, Map<String, VolumeMount>> users = new LinkedHashMap<>();

    Volumes(Sandboxes sandboxes, HostVolumes host, Path stateDir) {
        this.sandboxes = sandboxes;
        this.host = host;
        this.images = stateDir.resolve("volumes");
        this.mounts = stateDir.resolve("volume-mounts");
    }

    static String key(String tenant, String name) {
        return SnapshotTags.key(tenant, name);
    }

    // ---- the volumes themselves ---------------------------------------------------------------

    /**
     * Makes a volume. Its file system is made outside this object's lock (a large one takes a
     * while, and mounts of other volumes need not wait), its name held meanwhile.
     */
    VolumeInfo create(Caller caller, String name, int sizeMib) {
        checkName(name);
        if (sizeMib < VolumeService.MIN_SIZE_MIB || sizeMib > VolumeService.MAX_SIZE_MIB) {
            throw ApiException.badRequest("size_mib must be between " + VolumeService.MIN_SIZE_MIB + " and "
                    + VolumeService.MAX_SIZE_MIB + ", got " + sizeMib);
        }
        String key = key(caller.tenant(), name);
        if (!RecordCollection.isKey(key)) {
            throw ApiException.badRequest("the tenant's name and the volume's name together are too long to name a volume "
                    + "here; choose a shorter name");
        }
        StateStore state = sandboxes.state();
        synchronized (this) {
            if (state.get(StateCollections.VOLUMES, key).isPresent() || !making.add(key)) {
                throw ApiException.conflict("volume " + name + " exists; choose another name or DELETE /v1/volumes/" + name);
            }
        }
        try {
            VolumeRecord r = new VolumeRecord(caller.tenant(), name, sizeMib, Instant.now().getEpochSecond());
            Path image = imageOf(key);
            try {
                Files.createDirectories(images);
                host.create(image, name.length() > 16 ? name.substring(0, 16) : name, sizeMib);
            } catch (IOException e) {
                throw ApiException.internal("cannot make the file system of volume " + name + ": " + e.getMessage(), e);
            }
            try {
                state.commit(new Transaction().put(StateCollections.VOLUMES, key, r, Stored.ABSENT));
            } catch (IOException | RuntimeException e) {
                removeImage(image);
                if (e instanceof StaleRevisionException) {
                    throw ApiException.conflict("volume " + name + " was made by another request meanwhile");
                }
                throw e instanceof ApiException a ? a : ApiException.internal("cannot write the record of volume " + name, e);
            }
            return info(r);
        } finally {
            synchronized (this) {
                making.remove(key);
            }
        }
    }

    List<VolumeInfo> list(Caller caller) {
        return records().stream().filter(r -> r.tenant().equals(caller.tenant()))
                .sorted(Comparator.comparing(VolumeRecord::name)).map(this::info).toList();
    }

    VolumeInfo get(Caller caller, String name) {
        return info(record(caller.tenant(), name).body());
    }

    synchronized void delete(Caller caller, String name) {
        Stored<VolumeRecord> r = record(caller.tenant(), name);
        String key = r.key();
        Map<String, VolumeMount> using = users.getOrDefault(key, Map.of());
        if (!using.isEmpty()) {
            throw ApiException.conflict("volume " + name + " is mounted in sandbox(es) " + String.join(", ", using.keySet())
                    + "; delete them first");
        }
        if (!host.unmount(mounts.resolve(key))) {
            throw ApiException.conflict("volume " + name + " is still busy on the host (a process of a deleted sandbox "
                    + "holds it); retry in a moment");
        }
        try {
            sandboxes.state().commit(new Transaction().delete(StateCollections.VOLUMES, key, r.revision()));
        } catch (StaleRevisionException e) {
            throw ApiException.conflict("volume " + name + " was changed by another request meanwhile; retry");
        } catch (IOException e) {
            throw ApiException.internal("cannot remove the record of volume " + name, e);
        }
        removeImage(imageOf(key));
        removeDir(mounts.resolve(key));
    }

    private Stored<VolumeRecord> record(String tenant, String name) {
        checkName(name);
        String key = key(tenant, name);
        if (!RecordCollection.isKey(key)) {
            throw ApiException.notFound("no volume " + name);
        }
        return sandboxes.state().get(StateCollections.VOLUMES, key)
                .orElseThrow(() -> ApiException.notFound("no volume " + name + " (POST /v1/volumes makes one)"));
    }

    private List<VolumeRecord> records() {
        StateStore state = sandboxes.state();
        return state.all(StateCollections.VOLUMES).stream().filter(s -> s.node().equals(state.node()))
                .map(Stored::body).toList();
    }

    private synchronized VolumeInfo info(VolumeRecord r) {
        List<VolumeInfo.Attachment> attachments = users.getOrDefault(key(r.tenant(), r.name()), Map.of()).entrySet()
                .stream()
                .sorted(Comparator.comparing((Map.Entry<String, VolumeMount> e) -> e.getValue().readOnly())
                        .thenComparing(Map.Entry::getKey))
                .map(e -> new VolumeInfo.Attachment(e.getKey(), e.getValue().mountPath(), e.getValue().subPath(),
                        e.getValue().readOnly()))
                .toList();
        return new VolumeInfo(r.name(), r.sizeMib(), r.createdAtUnix(), attachments);
    }

    private static void checkName(String name) {
        if (name == null || !VolumeService.NAME.matcher(name).matches()) {
            throw ApiException.badRequest("a volume name is 1 to 63 lower-case letters, digits, '.', '_' and '-', "
                    + "starting with a letter or digit; got " + (name == null ? "none" : "\"" + name + "\""));
        }
    }

    // ---- sandboxes that mount them ------------------------------------------------------------

    /**
     * Reserves the volumes {@code record} asks for and binds them for it: 404 for a volume the
     * tenant lacks, 409 for a second writer. All or none: what was bound before a failure is undone.
     */
    synchronized void attach(SandboxRecord record) {
        List<VolumeMount> asked = record.mounts();
        if (asked.isEmpty()) {
            return;
        }
        Map<String, Stored<VolumeRecord>> found = new LinkedHashMap<>();
        for (VolumeMount m : asked) {
            Stored<VolumeRecord> v = record(record.tenant(), m.name());
            found.put(m.name(), v);
            if (!m.readOnly()) {
                users.getOrDefault(v.key(), Map.of()).entrySet().stream().filter(e -> !e.getValue().readOnly())
                        .findFirst().ifPresent(e -> {
                            throw ApiException.conflict("volume " + m.name() + " is mounted writable in sandbox "
                                    + e.getKey() + "; a volume has one writer at a time: mount it read_only, or "
                                    + "delete that sandbox first");
                        });
            }
        }
        for (VolumeMount m : asked) {
            users.computeIfAbsent(found.get(m.name()).key(), k -> new LinkedHashMap<>()).put(record.id(), m);
        }
        try {
            List<AttachedVolume> binds = sandboxes.dirs().volumesOf(record);
            for (int i = 0; i < asked.size(); i++) {
                VolumeMount m = asked.get(i);
                String key = found.get(m.name()).key();
                MountTable.Mount volume = host.mount(imageOf(key), mounts.resolve(key));
                host.bind(volume, m.subPath(), binds.get(i).hostDir(), m.readOnly(), m.name());
            }
        } catch (IOException | RuntimeException e) {
            detach(record);
            throw e instanceof ApiException a ? a
                    : ApiException.internal("cannot mount the volumes of sandbox " + record.id() + ": " + e.getMessage(), e);
        }
    }

    /** Unbinds the volumes of a sandbox that is gone, and unmounts each that no other sandbox uses. */
    void detach(SandboxRecord record) {
        if (!record.mounts().isEmpty()) {
            release(record);
        }
    }

    private synchronized void release(SandboxRecord record) {
        Path dir = sandboxes.dirs().volumeBindsOf(record.id());
        try {
            unbindAll(dir);
        } catch (IOException | UncheckedIOException e) {
            LOG.log(Level.WARNING, "cannot unbind the volumes of sandbox " + record.id() + ": " + e.getMessage());
        }
        for (String key : Set.copyOf(users.keySet())) {
            Map<String, VolumeMount> using = users.get(key);
            if (using.remove(record.id()) != null && using.isEmpty()) {
                users.remove(key);
                if (!host.unmount(mounts.resolve(key))) {
                    LOG.log(Level.WARNING, "volume " + key + " is still busy; it stays mounted until it is deleted or "
                            + "mounted again");
                }
            }
        }
    }

    /**
     * At start: who mounts what, from the sandboxes' records; then what a crash left is undone
     * (binds of sandboxes without a record, mounts no sandbox uses, file systems without a record).
     */
    synchronized void reconcile() {
        users.clear();
        Set<String> live = new HashSet<>();
        for (Sandbox sb : sandboxes.all()) {
            SandboxRecord r = sb.record();
            live.add(r.id());
            for (VolumeMount m : r.mounts()) {
                users.computeIfAbsent(key(r.tenant(), m.name()), k -> new LinkedHashMap<>()).put(r.id(), m);
            }
        }
        try {
            for (Path dir : HostVolumes.children(sandboxes.dirs().volumeBinds())) {
                if (!live.contains(dir.getFileName().toString())) {
                    unbindAll(dir);
                }
            }
            for (Path mount : HostVolumes.children(mounts)) {
                if (!users.containsKey(mount.getFileName().toString()) && host.unmount(mount)) {
                    removeDir(mount);
                }
            }
            Set<String> recorded = sandboxes.state().all(StateCollections.VOLUMES).stream().map(Stored::key)
                    .collect(Collectors.toSet());
            for (Path image : HostVolumes.children(images)) {
                String file = image.getFileName().toString();
                if (file.startsWith(".") || !recorded.contains(file.substring(0, Math.max(0, file.length() - IMAGE_SUFFIX.length())))) {
                    LOG.log(Level.WARNING, "removing " + image + ": a volume whose create did not finish");
                    removeImage(image);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot tidy the volumes' mounts: " + e.getMessage());
        }
    }

    /** Unbinds every bind in a sandbox's directory of binds, then removes the emptied directories. */
    private void unbindAll(Path dir) throws IOException {
        for (Path bind : HostVolumes.children(dir)) {
            host.unbind(bind);
            removeDir(bind);
        }
        removeDir(dir);
    }

    private Path imageOf(String key) {
        return images.resolve(key + IMAGE_SUFFIX);
    }

    private static void removeImage(Path image) {
        try {
            Files.deleteIfExists(image);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot remove " + image + ": " + e.getMessage());
        }
    }

    /** Removes an empty directory: never recursive, so a mount still in it is never walked into. */
    private static void removeDir(Path dir) {
        try {
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot remove " + dir + ": " + e.getMessage());
        }
    }
}
