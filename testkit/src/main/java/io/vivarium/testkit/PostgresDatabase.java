package io.vivarium.testkit;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class's PostgreSQL: one throwaway {@link PostgresCluster} for the class (its tests are
 * skipped, with the reason, without PostgreSQL's server binaries), database {@code vivarium}
 * emptied before each test. Register it with {@code @RegisterExtension static final}.
 */
public final class PostgresDatabase implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {
    private PostgresCluster cluster;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        cluster = PostgresCluster.start();
    }

    @Override
    public void beforeEach(ExtensionContext context) throws Exception {
        cluster.psql("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    public PostgresCluster cluster() {
        return cluster;
    }
}
