package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.OperationContext;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * A VM's checkpoints as internal qcow2 snapshots, restored in place into the running QEMU. A VM with
 * a {@value QemuCommand#VMSTATE_NODE} node ({@link VmFiles#vmstate()}, in memory) keeps each
 * checkpoint's RAM and device state there and its disk as an internal snapshot of
 * {@code disk.qcow2} (the jobs {@code snapshot-save}/{@code -load}/{@code -delete}, which name both
 * nodes): saving then writes no RAM state into the disk file and waits for no flush of it, and the
 * disk file does not grow by a RAM state per checkpoint. A VM started without that node keeps all of
 * it in {@code disk.qcow2} ({@code savevm}/{@code loadvm}/{@code delvm} through QMP's human monitor).
 * QEMU writes the RAM state first and the snapshot tables last, in its main loop, so a tag is listed
 * (it must be in both nodes) only once it is complete, and a daemon killed meanwhile does not stop
 * QEMU finishing it. Why this and not a RAM file per checkpoint: docs/qemu.md ("Checkpoints").
 */
final class VmCheckpoints {

    static final String MODE = "qcow2-internal";
    /** The disk in {@code disk.qcow2}, the RAM state in the {@value QemuCommand#VMSTATE_NODE} node. */
    static final String MODE_SPLIT = "qcow2-internal-vmstate-apart";
    /** How long listing or deleting may take; saving and loading get the caller's deadline. */
    private static final Duration MONITOR_TIMEOUT = Duration.ofSeconds(30);

    private final String id;
    private final Supplier<QmpClient> monitor;
    /** Whether QEMU has the RAM-state node: known from the last {@link #list()}, with which every operation starts. */
    private volatile boolean vmstateNode;
    /**
     * Tags the disk node has and the RAM-state node has not, from the last {@link #list()}: a save a
     * crash cut short, or the checkpoints of the parent whose disk a fork cloned. Never listed; a
     * save under such a tag removes it first (QEMU refuses to save over it).
     */
    private volatile Set<String> diskOnly = Set.of();

    VmCheckpoints(String id, Supplier<QmpClient> monitor) {
        this.id = id;
        this.monitor = monitor;
    }

    CheckpointInfo create(String tag, OperationContext context) {
        if (find(tag).isPresent()) {
            throw ApiException.conflict("sandbox " + id + " already has a checkpoint " + tag + "; choose another tag");
        }
        context.checkpoint("saving the VM's state");
        try {
            if (vmstateNode) {
                if (diskOnly.contains(tag)) {
                    ObjectNode disk = JsonNodeFactory.instance.objectNode().put("tag", tag);
                    disk.putArray("devices").add(QemuCommand.DISK_NODE);
                    qmp().runJob("snapshot-delete", disk, MONITOR_TIMEOUT);
                }
                qmp().runJob("snapshot-save", job(tag).put("vmstate", QemuCommand.VMSTATE_NODE), context.remaining());
            } else {
                human("savevm " + tag, context.remaining());
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot checkpoint sandbox " + id + " as " + tag + ": " + e.getMessage(), e);
        }
        return find(tag).orElseThrow(() -> ApiException.internal("QEMU saved checkpoint " + tag + " of sandbox " + id
                + " but does not list it", null));
    }

    /** Loads {@code tag} into the running QEMU and lets the guest run on from there, a powered-off one too. */
    void restore(String tag, OperationContext context) {
        if (find(tag).isEmpty()) {
            throw ApiException.notFound("sandbox " + id + " has no checkpoint " + tag);
        }
        try {
            if (RunState.SHUT_DOWN.equals(RunState.of(qmp()))) {
                RunState.resetOutOfShutdown(qmp(), context, () -> load(tag, context));
            } else {
                load(tag, context);
            }
        } catch (IOException e) {
            throw ApiException.internal("restoring sandbox " + id + " to " + tag + " failed, so the VM may be in its "
                    + "state from before or from the checkpoint: " + e.getMessage(), e);
        }
    }

    private void load(String tag, OperationContext context) throws IOException {
        context.checkpoint("loading the VM's state");
        if (vmstateNode) {
            qmp().runJob("snapshot-load", job(tag).put("vmstate", QemuCommand.VMSTATE_NODE), context.remaining());
        } else {
            human("loadvm " + tag, context.remaining());
        }
        RunState.cont(qmp());
    }

    boolean delete(String tag) {
        if (find(tag).isEmpty()) {
            return false;
        }
        try {
            if (vmstateNode) {
                qmp().runJob("snapshot-delete", job(tag), MONITOR_TIMEOUT);
            } else {
                human("delvm " + tag, MONITOR_TIMEOUT);
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot delete checkpoint " + tag + " of sandbox " + id + ": " + e.getMessage(), e);
        }
        return true;
    }

    /**
     * The snapshots of the disk node, oldest first; with a {@value QemuCommand#VMSTATE_NODE} node, those
     * it also has (where their RAM state is).
     */
    List<CheckpointInfo> list() {
        JsonNode nodes;
        try {
            nodes = qmp().execute("query-named-block-nodes", null, MONITOR_TIMEOUT);
        } catch (IOException e) {
            throw ApiException.internal("cannot list the checkpoints of sandbox " + id + ": " + e.getMessage(), e);
        }
        List<JsonNode> snapshots = new ArrayList<>();
        Map<String, Long> states = null;
        for (JsonNode node : nodes) {
            String name = node.path("node-name").asText();
            if (QemuCommand.DISK_NODE.equals(name)) {
                node.path("image").path("snapshots").forEach(snapshots::add);
            } else if (QemuCommand.VMSTATE_NODE.equals(name)) {
                states = new HashMap<>();
                for (JsonNode s : node.path("image").path("snapshots")) {
                    states.put(s.path("name").asText(), s.path("vm-state-size").asLong());
                }
            }
        }
        vmstateNode = states != null;
        Map<String, Long> apart = states;
        diskOnly = apart == null ? Set.of() : snapshots.stream().map(s -> s.path("name").asText())
                .filter(name -> !apart.containsKey(name)).collect(Collectors.toUnmodifiableSet());
        return snapshots.stream()
                .filter(s -> apart == null || apart.containsKey(s.path("name").asText()))
                .sorted(Comparator.comparingLong((JsonNode s) -> s.path("date-sec").asLong())
                        .thenComparingLong(s -> s.path("date-nsec").asLong()))
                .map(s -> apart == null
                        ? new CheckpointInfo(s.path("name").asText(), s.path("date-sec").asLong(),
                                s.path("vm-state-size").asLong(), MODE)
                        : new CheckpointInfo(s.path("name").asText(), s.path("date-sec").asLong(),
                                apart.get(s.path("name").asText()), MODE_SPLIT))
                .toList();
    }

    /** The arguments of a snapshot job on {@code tag}: the disk node and the RAM-state node. */
    private static ObjectNode job(String tag) {
        ObjectNode arguments = JsonNodeFactory.instance.objectNode().put("tag", tag);
        arguments.putArray("devices").add(QemuCommand.DISK_NODE).add(QemuCommand.VMSTATE_NODE);
        return arguments;
    }

    private Optional<CheckpointInfo> find(String tag) {
        return list().stream().filter(c -> c.tag().equals(tag)).findFirst();
    }

    /**
     * An HMP command (tags reach here checked by core: plain names, nothing a monitor line could
     * split on). HMP reports a failure as printed text, so any output is the error.
     */
    private void human(String line, Duration timeout) throws IOException {
        JsonNode out = qmp().execute("human-monitor-command",
                JsonNodeFactory.instance.objectNode().put("command-line", line), timeout);
        String printed = out.asText().strip();
        if (!printed.isEmpty()) {
            throw new IOException(line + ": " + printed);
        }
    }

    private QmpClient qmp() throws IOException {
        QmpClient q = monitor.get();
        if (q == null || !q.isOpen()) {
            throw new IOException("the monitor connection of sandbox " + id + " is closed");
        }
        return q;
    }
}
