package io.vivarium.apiv1.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.BaselineRequest;
import io.vivarium.api.ChangesRequest;
import io.vivarium.api.CommandService;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.PluginService;
import io.vivarium.api.PortService;
import io.vivarium.api.TemplateService;
import io.vivarium.api.VolumeService;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxService;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.VmService;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.Route;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;

/**
 * The {@code /v1} API. Routes that reach into a sandbox (ping, exec, eval, files, baseline, changes,
 * dry-run, branch, checkpoints) are for admins, as in the reference API; lifecycle routes are open
 * to every role, always scoped to the caller's tenant; daemon-wide administration
 * ({@link OperatorRoutes}) is for operators, and answers 503 while no {@link PluginService} runs, so
 * the sandbox routes never depend on it.
 */
@Component(service = ApiSurface.class)
public class V1Surface implements ApiSurface {

    private static final String OCTET_STREAM = "application/octet-stream";

    /** The contract of this surface, docs/openapi.json, which the build puts beside this class. */
    static final String OPENAPI_RESOURCE = "openapi.json";

    private final List<Route> routes;

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC)
    private volatile PluginService plugins;

    /** Greedy on the sandbox, VM, snapshot, command, port and volume services: the fleet's, ranked above core's and wrapping them, take over when it starts. */
    @Activate
    public V1Surface(@Reference(policyOption = ReferencePolicyOption.GREEDY) SandboxService sandboxes,
            @Reference(policyOption = ReferencePolicyOption.GREEDY) VmService vms,
            @Reference(policyOption = ReferencePolicyOption.GREEDY) SnapshotService snapshots,
            @Reference(policyOption = ReferencePolicyOption.GREEDY) CommandService commands,
            @Reference(policyOption = ReferencePolicyOption.GREEDY) PortService ports,
            @Reference(policyOption = ReferencePolicyOption.GREEDY) VolumeService volumes,
            @Reference(policyOption = ReferencePolicyOption.GREEDY) TemplateService templates) {
        byte[] openApi = openApiDocument();
        List<Route> sandboxRoutes = List.of(
                new Route("GET", "/openapi.json", Role.USER, 200, r -> BinaryBody.of("application/json", openApi)),
                new Route("GET", "/backends", Role.USER, 200, r -> sandboxes.backends()),
                new Route("POST", "/sandboxes", Role.USER, 201, r -> {
                    SandboxesBody body = r.optionalBody(SandboxesBody.class).orElse(null);
                    if (body != null && body.fork()) {
                        ForkRequest fork = body.forkRequest();
                        return ProgressEvents.asked(r) ? ProgressEvents.start(p -> snapshots.fork(r.caller(), fork, p))
                                : snapshots.fork(r.caller(), fork);
                    }
                    return sandboxes.create(r.caller(), body == null ? null : body.createRequest());
                }),
                new Route("GET", "/sandboxes", Role.USER, 200, r -> sandboxes.list(r.caller())),
                new Route("GET", "/sandboxes/{id}", Role.USER, 200, r -> sandboxes.get(r.caller(), r.pathParam("id"))),
                new Route("DELETE", "/sandboxes/{id}", Role.USER, 204, r -> {
                    sandboxes.delete(r.caller(), r.pathParam("id"), CommandRoutes.flag(r, "force"));
                    return null;
                }),
                new Route("POST", "/sandboxes/{id}/ping", Role.ADMIN, 200, RelayedRoutes.orHere(sandboxes, "/ping",
                        r -> sandboxes.ping(r.caller(), r.pathParam("id")))),
                new Route("POST", "/sandboxes/{id}/exec", Role.ADMIN, 200, RelayedRoutes.orHere(sandboxes, "/exec",
                        r -> sandboxes.exec(r.caller(), r.pathParam("id"), r.body(ExecRequest.class)))),
                new Route("POST", "/sandboxes/{id}/eval", Role.ADMIN, 200, RelayedRoutes.orHere(sandboxes, "/eval",
                        r -> sandboxes.eval(r.caller(), r.pathParam("id"), r.body(EvalRequest.class)))),
                new Route("POST", "/sandboxes/{id}/pause", Role.USER, 200,
                        r -> sandboxes.pause(r.caller(), r.pathParam("id"))),
                new Route("POST", "/sandboxes/{id}/resume", Role.USER, 200,
                        r -> sandboxes.resume(r.caller(), r.pathParam("id"))),
                new Route("POST", "/sandboxes/{id}/baseline", Role.ADMIN, 200, RelayedRoutes.orHere(sandboxes, "/baseline",
                        r -> sandboxes.baseline(r.caller(), r.pathParam("id"), r.body(BaselineRequest.class)))),
                new Route("POST", "/sandboxes/{id}/changes", Role.ADMIN, 200, RelayedRoutes.orHere(sandboxes, "/changes",
                        r -> sandboxes.changes(r.caller(), r.pathParam("id"),
                                r.optionalBody(ChangesRequest.class).orElse(null)))),
                new Route("POST", "/sandboxes/{id}/dry-run", Role.ADMIN, 200, RelayedRoutes.orHere(sandboxes, "/dry-run",
                        r -> sandboxes.dryRun(r.caller(), r.pathParam("id"), r.body(DryRunRequest.class)))),
                new Route("GET", "/sandboxes/{id}/files", Role.ADMIN, 200, RelayedRoutes.orHere(sandboxes, "/files",
                        r -> BinaryBody.of(OCTET_STREAM,
                                sandboxes.readFile(r.caller(), r.pathParam("id"), r.queryParam("path").orElse(null))))),
                new Route("PUT", "/sandboxes/{id}/files", Role.ADMIN, 204, RelayedRoutes.orHere(sandboxes, "/files", r -> {
                    sandboxes.writeFile(r.caller(), r.pathParam("id"), r.queryParam("path").orElse(null), r.rawBody());
                    return null;
                }), SandboxService.MAX_FILE_BYTES));
        this.routes = Stream.of(sandboxRoutes, SnapshotRoutes.of(snapshots), vmRoutes(vms),
                CheckpointRoutes.of(sandboxes, vms), CommandRoutes.of(commands), PortRoutes.of(ports),
                VolumeRoutes.of(volumes), TemplateRoutes.of(templates),
                OperatorRoutes.of(this::plugins)).flatMap(List::stream).toList();
    }

    /** The machine view of sandboxes: lifecycle routes for every role, as for sandboxes (checkpoints are {@link CheckpointRoutes}). */
    private static List<Route> vmRoutes(VmService vms) {
        return List.of(
                new Route("POST", "/vms", Role.USER, 201,
                        r -> vms.createVm(r.caller(), r.body(CreateSandboxRequest.class))),
                new Route("GET", "/vms", Role.USER, 200, r -> vms.listVms(r.caller())),
                new Route("GET", "/vms/{id}", Role.USER, 200, r -> vms.getVm(r.caller(), r.pathParam("id"))),
                new Route("DELETE", "/vms/{id}", Role.USER, 204, r -> {
                    vms.deleteVm(r.caller(), r.pathParam("id"), CommandRoutes.flag(r, "force"));
                    return null;
                }),
                new Route("POST", "/vms/{id}/stop", Role.USER, 200, r -> vms.stopVm(r.caller(), r.pathParam("id"))),
                new Route("POST", "/vms/{id}/start", Role.USER, 200, r -> vms.startVm(r.caller(), r.pathParam("id"))));
    }

    static byte[] openApiDocument() {
        try (InputStream in = V1Surface.class.getResourceAsStream(OPENAPI_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(OPENAPI_RESOURCE + " is missing from the api-v1 bundle");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private PluginService plugins() {
        PluginService p = plugins;
        if (p == null) {
            throw ApiException.unavailable("runtime administration is not running (the io.vivarium.plugins bundle "
                    + "of the core feature is not active); see the daemon log", 5);
        }
        return p;
    }

    @Override
    public String prefix() {
        return "/v1";
    }

    @Override
    public List<Route> routes() {
        return routes;
    }
}
