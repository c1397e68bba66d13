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
import io.vivarium.common.files.AtomicFiles;
import io.vivarium.common.mounts.MountTable;

/**
 * The volumes of this host (docs/volumes.md): their records in the state store, their file
 * systems under {@code <state>/volumes/}, and which sandboxes mount them. A volume is mounted once,
 * at {@code <state>/volume-mounts/<key>}, while any sandbox binds it, and bound for each sandbox at
 * {@link SandboxDirs#volumesOf}; or it is a disk of one sandbox whose backend attaches volumes as
 * disks ({@code volume_disks}), which takes it alone: its guest writes the file system, which the host
 * then never mounts (it would read it torn). Who uses what is rebuilt from the sandboxes' records at
 * start; attaching, detaching and deleting take this object's lock, so a volume never gets two
 * writers nor is deleted in use.
 */
final class Volumes {
    private static final System.Logger LOG = System.getLogger(Volumes.class.getName());

    private final Sandboxes sandboxes;
    private final HostVolumes host;
    private final Path mounts;
    /** The keys of the volumes whose file systems are being made ({@link #create}). */
    private final Set<String> making = new HashSet<>();
    /** By volume key: the sandboxes that mount it, and how. */
    private final Map<String, Map<String, Use>> users = new LinkedHashMap<>();

    /** How a sandbox mounts a volume: bound from the host's mount, or as a disk of its own. */
    private record Use(VolumeMount mount, boolean disk) {
    }

    Volumes(Sandboxes sandboxes, HostVolumes host, Path stateDir) {
        this.sandboxes = sandboxes;
        this.host = host;
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
                Files.createDirectories(sandboxes.dirs().volumeImages());
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
        Map<String, Use> using = users.getOrDefault(key, Map.of());
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
                .sorted(Comparator.comparing((Map.Entry<String, Use> e) -> e.getValue().mount().readOnly())
                        .thenComparing(Map.Entry::getKey))
                .map(e -> new VolumeInfo.Attachment(e.getKey(), e.getValue().mount().mountPath(),
                        e.getValue().mount().subPath(), e.getValue().mount().readOnly()))
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
     * Reserves the volumes {@code record} asks for and makes them ready for it (bound, or, for a
     * sandbox that takes them as disks, not mounted on the host): 404 for a volume the tenant lacks,
     * 409 for a second writer or a volume another sandbox has as a disk. All or none: what was
     * done before a failure is undone.
     */
    synchronized void attach(SandboxRecord record) {
        List<VolumeMount> asked = record.mounts();
        if (asked.isEmpty()) {
            return;
        }
        boolean disks = record.mountsVolumeDisks();
        Map<String, Stored<VolumeRecord>> found = new LinkedHashMap<>();
        for (VolumeMount m : asked) {
            Stored<VolumeRecord> v = record(record.tenant(), m.name());
            found.put(m.name(), v);
            refuseSharing(v.key(), m, disks);
        }
        for (VolumeMount m : asked) {
            users.computeIfAbsent(found.get(m.name()).key(), k -> new LinkedHashMap<>()).put(record.id(), new Use(m, disks));
        }
        try {
            List<AttachedVolume> given = sandboxes.dirs().volumesOf(record);
            for (int i = 0; i < asked.size(); i++) {
                VolumeMount m = asked.get(i);
                String key = found.get(m.name()).key();
                if (disks) {
                    // a mount a sandbox that bound it left behind (busy when it went) must go first
                    if (!host.unmount(mounts.resolve(key))) {
                        throw ApiException.conflict("volume " + m.name() + " is still busy on the host (a process of a "
                                + "deleted sandbox holds it); retry in a moment");
                    }
                    continue;
                }
                MountTable.Mount volume = host.mount(imageOf(key), mounts.resolve(key));
                host.bind(volume, m.subPath(), given.get(i).hostDir(), m.readOnly(), m.name());
            }
        } catch (IOException | RuntimeException e) {
            detach(record);
            throw e instanceof ApiException a ? a
                    : ApiException.internal("cannot mount the volumes of sandbox " + record.id() + ": " + e.getMessage(), e);
        }
    }

    /**
     * 409 unless the volume may be mounted as {@code m} asks beside its users: one writer at a
     * time, and a sandbox that has it as a disk has it alone.
     */
    private void refuseSharing(String key, VolumeMount m, boolean disk) {
        for (Map.Entry<String, Use> e : users.getOrDefault(key, Map.of()).entrySet()) {
            Use other = e.getValue();
            if (disk || other.disk()) {
                throw ApiException.conflict("volume " + m.name() + " is mounted in sandbox " + e.getKey() + ", and "
                        + (disk ? "this sandbox's backend attaches" : "that sandbox's backend attaches")
                        + " volumes as disks (volume_disks in GET /v1/backends), which take a volume alone: "
                        + "delete that sandbox first");
            }
            if (!m.readOnly() && !other.mount().readOnly()) {
                throw ApiException.conflict("volume " + m.name() + " is mounted writable in sandbox " + e.getKey()
                        + "; a volume has one writer at a time: mount it read_only, or delete that sandbox first");
            }
        }
    }

    /**
     * Lets go of the volumes of a sandbox that is gone: unbinds them and unmounts each that no other
     * sandbox uses; a volume that was its disk is made durable on the host first (its guest froze
     * and flushed it as the sandbox was deleted), so the next sandbox reads all of it.
     */
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
            Map<String, Use> using = users.get(key);
            Use gone = using.remove(record.id());
            if (gone != null && gone.disk()) {
                seal(imageOf(key));
            }
            if (gone != null && using.isEmpty()) {
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
                users.computeIfAbsent(key(r.tenant(), m.name()), k -> new LinkedHashMap<>())
                        .put(r.id(), new Use(m, r.mountsVolumeDisks()));
            }
        }
        try {
            for (Path dir : HostVolumes.children(sandboxes.dirs().volumeBinds())) {
                if (!live.contains(dir.getFileName().toString())) {
                    unbindAll(dir);
                }
            }
            for (Path mount : HostVolumes.children(mounts)) {
                boolean bound = users.getOrDefault(mount.getFileName().toString(), Map.of()).values().stream()
                        .anyMatch(u -> !u.disk());
                if (!bound && host.unmount(mount)) {
                    removeDir(mount);
                }
            }
            Set<String> recorded = sandboxes.state().all(StateCollections.VOLUMES).stream().map(Stored::key)
                    .collect(Collectors.toSet());
            for (Path image : HostVolumes.children(sandboxes.dirs().volumeImages())) {
                if (!SandboxDirs.volumeKeyOf(image).filter(recorded::contains).isPresent()) {
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
        return sandboxes.dirs().volumeImageOf(key);
    }

    /** Makes what a guest wrote to a volume's file durable on the host. */
    private static void seal(Path image) {
        try {
            AtomicFiles.fsync(image);
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot make " + image + " durable: " + e.getMessage());
        }
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
