package io.vivarium.state.postgres.internal;

import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;

import io.vivarium.api.ApiException;
import io.vivarium.common.state.PostgresUrl;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import org.flywaydb.core.Flyway;

/**
 * The database: a pool of connections (HikariCP) to a schema that Flyway brought to this version's
 * migrations. A request waits at most the configured time for a connection; a database that does
 * not answer by then is {@linkplain #unavailable unavailable}, a 503 with {@code Retry-After}.
 */
final class Database implements AutoCloseable {
    private static final String MIGRATIONS = "classpath:io/vivarium/state/postgres/migration";

    private final PostgresUrl url;
    private final HikariDataSource pool;
    private final int retryAfterSeconds;

    private Database(PostgresUrl url, HikariDataSource pool, int retryAfterSeconds) {
        this.url = url;
        this.pool = pool;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    /**
     * Connects and migrates the schema.
     *
     * @throws IOException if the database cannot be reached or migrated; the message names it without its password
     */
    static Database open(PostgresUrl url, int poolSize, Duration connectionWait, Duration statementTimeout,
            int retryAfterSeconds) throws IOException {
        HikariConfig config = new HikariConfig();
        config.setPoolName("vivarium-state");
        config.setJdbcUrl(url.jdbc());
        config.setUsername(url.user());
        config.setPassword(url.password());
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(1);
        config.setConnectionTimeout(Math.max(250, connectionWait.toMillis()));
        config.setValidationTimeout(Math.max(250, Math.min(connectionWait.toMillis(), 1000)));
        // a connection that hangs on a dead server gives up within the statement timeout, not the TCP timeout
        config.addDataSourceProperty("socketTimeout", Long.toString(Math.max(1, statementTimeout.toSeconds() + 1)));
        config.addDataSourceProperty("connectTimeout", Long.toString(Math.max(1, connectionWait.toSeconds())));
        config.addDataSourceProperty("options", "-c statement_timeout=" + statementTimeout.toMillis());
        config.addDataSourceProperty("ApplicationName", "vivarium");
        config.setInitializationFailTimeout(-1); // the first connection is made (and its failure told) below
        HikariDataSource pool;
        ClassLoader tccl = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(Database.class.getClassLoader());
        try {
            pool = new HikariDataSource(config);
        } finally {
            Thread.currentThread().setContextClassLoader(tccl);
        }
        Database db = new Database(url, pool, retryAfterSeconds);
        try {
            db.migrate();
        } catch (IOException | RuntimeException e) {
            pool.close();
            throw e;
        }
        return db;
    }

    private void migrate() throws IOException {
        ClassLoader tccl = Thread.currentThread().getContextClassLoader();
        ClassLoader own = Database.class.getClassLoader();
        // Flyway finds its database support (ServiceLoader) and the migrations through the class loader it is given
        Thread.currentThread().setContextClassLoader(own);
        try {
            Flyway.configure(own).dataSource(pool).locations(MIGRATIONS).table("vivarium_schema_history")
                    .loggers("slf4j").load().migrate();
        } catch (RuntimeException e) {
            throw new IOException("cannot bring the state database " + url + " to this version's schema: "
                    + url.mask(rootMessage(e)), e);
        } finally {
            Thread.currentThread().setContextClassLoader(tccl);
        }
    }

    Connection connection() throws SQLException {
        return pool.getConnection();
    }

    PostgresUrl url() {
        return url;
    }

    /** Whether {@code e} says the database could not be reached (rather than refused what was asked). */
    static boolean unreachable(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLTransientConnectionException) {
                return true;
            }
            if (t instanceof SQLException s && s.getSQLState() != null
                    && (s.getSQLState().startsWith("08") || s.getSQLState().startsWith("57P") || s.getSQLState().equals("57014"))) {
                return true; // connection exceptions, admin shutdown / cannot connect now, statement timeout
            }
        }
        return false;
    }

    /** The database did not answer within the bounded wait: a 503 the caller retries. */
    ApiException unavailable(SQLException e) {
        return new ApiException(503, "the state store (PostgreSQL at " + url + ") cannot be reached: " + url.mask(rootMessage(e))
                + "; nothing was written, retry in a moment", retryAfterSeconds, null);
    }

    /** {@code e} as the caller should see it: a 503 when the database is away, else an I/O failure. */
    RuntimeException orIo(SQLException e, String doing) throws IOException {
        if (unreachable(e)) {
            throw unavailable(e);
        }
        throw new IOException(doing + " in " + url + ": " + url.mask(rootMessage(e)), e);
    }

    static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t == e ? String.valueOf(e.getMessage()) : e.getMessage() + " (" + t.getMessage() + ")";
    }

    @Override
    public void close() {
        pool.close();
    }
}
