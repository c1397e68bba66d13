package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.ScratchRun;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * Runs a command against a throwaway view of a sandbox's workspace, in a twin of the sandbox
 * ({@link SandboxCommands#twin}), so that neither the sandbox nor its workspace is ever written.
 * The view is an overlay on the workspace when the daemon is root, so its cost follows what the
 * command writes; otherwise, or when the mount fails, it is a full copy of the workspace.
 */
final class DryRunner {

    private static final System.Logger LOG = System.getLogger(DryRunner.class.getName());

    private final SandboxCommands commands;
    private final boolean overlays;

    /** @param overlays false to always copy (tests of the fallback) */
    DryRunner(SandboxCommands commands, boolean overlays) {
        this.commands = commands;
        this.overlays = overlays;
    }

    ScratchRun run(ProcboxInstance instance, ExecRequest request) {
        ProcboxRecord sandbox = instance.sandbox();
        if (!sandbox.init().isRunning()) {
            throw new ApiException(503, "sandbox " + instance.id() + " is not running");
        }
        HostTools tools = HostTools.withAccessOf(sandbox);
        DryRunScratch scratch;
        try {
            scratch = DryRunScratch.create(instance.dir());
        } catch (IOException e) {
            throw ApiException.internal("cannot make a scratch directory for the dry-run: " + e, e);
        }
        try {
            HostFiles workspace = instance.workspaceOnHost(scratch);
            boolean overlay = overlays && ProcFs.effectiveUid() == 0 && mountOverlay(scratch, workspace);
            Path view = overlay ? scratch.merged() : copy(scratch, workspace, tools);
            ExecResult result = ProcessRunner.run(
                    commands.twin(sandbox, scratch.twinFiles(), view, instance.volumes(), request.cwd(), request.args()),
                    request.env(), request.stdin(), Duration.ofSeconds(request.timeoutSecs()),
                    request.maxOutputBytes());
            // what the command left running in the background is part of what is thrown away
            scratch.killTwin();
            Optional<Set<String>> touched = overlay
                    ? Optional.of(UpperLayer.touched(scratch.upper(), workspace.hostDir(), view, workspace.sandboxDir()))
                    : Optional.empty();
            HostFiles after = new HostFiles(view, workspace.sandboxDir(), workspace.uid(), workspace.gid());
            return new ProcboxScratchRun(result, instance.forWalks(), after, touched,
                    overlay ? ProcboxScratchRun.OVERLAY : ProcboxScratchRun.WORKSPACE_COPY, scratch, tools);
        } catch (IOException | RuntimeException e) {
            try {
                scratch.discard(tools);
            } catch (IOException | RuntimeException discardFailure) {
                e.addSuppressed(discardFailure);
                throw ApiException.internal("the dry-run failed (" + e.getMessage() + ") and its changes could not be "
                        + "discarded: " + discardFailure.getMessage(), e);
            }
            throw e instanceof ApiException api ? api : ApiException.internal("the dry-run failed: " + e.getMessage(), e);
        }
    }

    /**
     * The upper layer's root becomes the merged view's root directory, so it gets the
     * workspace's owner and mode for the sandbox user to write there.
     */
    private static boolean mountOverlay(DryRunScratch scratch, HostFiles workspace) throws IOException {
        Files.createDirectory(scratch.upper());
        Files.createDirectory(scratch.overlayWorkDir());
        Files.createDirectory(scratch.merged());
        Path upper = scratch.upper();
        Files.setAttribute(upper, "unix:uid", Files.getAttribute(workspace.hostDir(), "unix:uid"));
        Files.setAttribute(upper, "unix:gid", Files.getAttribute(workspace.hostDir(), "unix:gid"));
        Files.setAttribute(upper, "unix:mode", Files.getAttribute(workspace.hostDir(), "unix:mode"));
        try {
            OverlayMount.mount(workspace.hostDir(), upper, scratch.overlayWorkDir(), scratch.merged());
            return true;
        } catch (IOException e) {
            LOG.log(Level.WARNING, "dry-run falls back to copying the workspace: " + e.getMessage());
            return false;
        }
    }

    private static Path copy(DryRunScratch scratch, HostFiles workspace, HostTools tools) throws IOException {
        Path copy = Files.createDirectory(scratch.copy());
        tools.copyTree(workspace.hostDir(), copy);
        return copy;
    }
}
