package io.vivarium.core.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.SandboxService;
import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.SandboxInstance;

/** Reaching into a sandbox through its guest channel: ping, exec and files, with requests checked first. */
final class GuestAccess {
    private final Sandboxes sandboxes;
    private final LiveInstances live;

    GuestAccess(Sandboxes sandboxes, LiveInstances live) {
        this.sandboxes = sandboxes;
        this.live = live;
    }

    private <T> T shared(Sandbox sb, Supplier<T> call) {
        return sb.gate.shared(live.patience(), call);
    }

    PingResult ping(Caller caller, String id) {
        Sandbox sb = sandboxes.find(caller, id);
        return shared(sb, () -> live.forChannel(sb).channel().ping());
    }

    ExecResult exec(Caller caller, String id, ExecRequest request) {
        Sandbox sb = sandboxes.find(caller, id);
        return shared(sb, () -> exec(sb, request));
    }

    private ExecResult exec(Sandbox sb, ExecRequest request) {
        SandboxInstance instance = live.forChannel(sb);
        return instance.channel().exec(complete(sb, instance, request));
    }

    /** {@code request} with its defaults filled in, checked against what the instance's channel can carry. */
    static ExecRequest complete(Sandbox sb, SandboxInstance instance, ExecRequest request) {
        ExecRequest complete = ExecRequests.complete(request, instance.workspace(), sb.record().root());
        long channelMax = instance.channel().limits().maxOutputBytes();
        if (complete.maxOutputBytes() > channelMax) {
            throw ApiException.badRequest("max_output_bytes " + complete.maxOutputBytes() + " is more than backend "
                    + sb.record().backend() + " can return (" + channelMax + " bytes per stream)");
        }
        return complete;
    }

    byte[] readFile(Caller caller, String id, String path) {
        String p = filePath(path);
        Sandbox sb = sandboxes.find(caller, id);
        return shared(sb, () -> {
            GuestChannel channel = live.forChannel(sb).channel();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try {
                channel.readFile(p, Math.min(SandboxService.MAX_FILE_BYTES, channel.limits().maxFileBytes()), out);
            } catch (IOException e) {
                throw ApiException.internal("cannot read " + p + " from sandbox " + id + ": " + e.getMessage(), e);
            }
            return out.toByteArray();
        });
    }

    void writeFile(Caller caller, String id, String path, byte[] content) {
        String p = filePath(path);
        Sandbox sb = sandboxes.find(caller, id);
        shared(sb, () -> {
            GuestChannel channel = live.forChannel(sb).channel();
            long max = Math.min(SandboxService.MAX_FILE_BYTES, channel.limits().maxFileBytes());
            if (content.length > max) {
                throw new ApiException(413, "file is " + content.length + " bytes; at most " + max + " can be written");
            }
            channel.writeFile(p, content);
            return null;
        });
    }

    /** A file path as a caller names it: absolute, no {@code ..}, no control characters, not a directory. */
    private static String filePath(String path) {
        if (path == null || path.isEmpty()) {
            throw ApiException.badRequest("path is required: the absolute path of a file in the sandbox, "
                    + "e.g. ?path=/work/notes.txt");
        }
        String p = SandboxPaths.normalise(path);
        if (p.equals("/") || path.endsWith("/")) {
            throw ApiException.badRequest("path must name a file, not a directory: \"" + path + "\"");
        }
        return p;
    }
}
