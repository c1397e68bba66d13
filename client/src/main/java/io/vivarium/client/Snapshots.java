package io.vivarium.client;

import java.util.List;

import io.vivarium.api.CompactRequest;
import io.vivarium.api.Progress;
import io.vivarium.api.SnapshotInfo;
import io.vivarium.api.SnapshotInfoDetail;
import io.vivarium.api.SnapshotRequest;

import com.fasterxml.jackson.core.type.TypeReference;

/** The snapshot registry: build, list, inspect, compact and delete tags (fork them with {@link Sandboxes#fork}). */
public final class Snapshots {
    private final Http http;

    Snapshots(Http http) {
        this.http = http;
    }

    private static String of(String tag) {
        return "/v1/snapshots/" + Http.segment(tag);
    }

    /** Builds a snapshot: boots a fresh sandbox, runs the setup, captures it. */
    @Route("POST /v1/snapshots")
    public SnapshotInfo build(SnapshotRequest request) {
        return http.json("POST", "/v1/snapshots", request, SnapshotInfo.class);
    }

    /** {@link #build(SnapshotRequest)}, telling {@code progress} each of its steps as it is done. */
    @Route("POST /v1/snapshots")
    public SnapshotInfo build(SnapshotRequest request, Progress progress) {
        return http.progressed("POST", "/v1/snapshots", request, progress, new TypeReference<SnapshotInfo>() { });
    }

    @Route("GET /v1/snapshots")
    public List<SnapshotInfo> list() {
        return http.json("GET", "/v1/snapshots", null, new TypeReference<List<SnapshotInfo>>() { });
    }

    @Route("GET /v1/snapshots/{tag}/info")
    public SnapshotInfoDetail info(String tag) {
        return http.json("GET", of(tag) + "/info", null, SnapshotInfoDetail.class);
    }

    /** A flat copy of {@code tag} under the new tag {@code to}. */
    @Route("POST /v1/snapshots/{tag}/compact")
    public SnapshotInfo compact(String tag, String to) {
        return http.json("POST", of(tag) + "/compact", new CompactRequest(to), SnapshotInfo.class);
    }

    /** Deletes a tag; {@code cascade} its dependents first, {@code force} leaves them orphaned. */
    @Route("DELETE /v1/snapshots/{tag}")
    public void delete(String tag, boolean cascade, boolean force) {
        http.noContent("DELETE", of(tag) + "?cascade=" + cascade + "&force=" + force);
    }
}
