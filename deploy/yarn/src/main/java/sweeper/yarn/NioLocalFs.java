package sweeper.yarn;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * Hadoop's local file system for {@code FileContext} ({@code fs.AbstractFileSystem.file.impl}), the same as its own
 * {@code LocalFs} except that, without Hadoop's native library, a file's permissions are set through java.nio
 * instead of a {@code chmod} process per file.
 *
 * <p>For the test clusters' NodeManagers (tests/support/ns_cluster.py, {@link MiniYarn}), which run Hadoop's jars
 * from Maven Central, without {@code libhadoop.so}: a NodeManager sets the permissions of every file it localizes,
 * and unpacking the sweeper's packed environment (~6,500 files) then forked ~6,500 processes, ~20 s a node. A cluster
 * installed from Hadoop's own distribution has the native library, which does the same without a process. Only the
 * daemons name it: a client or a container has no sweeper-yarn.jar on its class path.
 */
public final class NioLocalFs extends ChecksumFs {
  public NioLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new Raw(uri, conf));
  }

  /** What {@code org.apache.hadoop.fs.local.RawLocalFs} is, over {@link NioLocalFileSystem}. */
  static final class Raw extends DelegateToFileSystem {
    Raw(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(uri, new NioLocalFileSystem(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1; // no default port for file:///
    }

    @Override
    @Deprecated
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public FsServerDefaults getServerDefaults(Path f) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
      return true; // any local path
    }
  }

  /** {@code RawLocalFileSystem} whose {@code setPermission} needs no process when the native library is absent. */
  public static final class NioLocalFileSystem extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      if (NativeIO.isAvailable()) {
        super.setPermission(p, permission);
        return;
      }
      String symbolic = permission.getUserAction().SYMBOL + permission.getGroupAction().SYMBOL
          + permission.getOtherAction().SYMBOL;
      Files.setPosixFilePermissions(pathToFile(p).toPath(), PosixFilePermissions.fromString(symbolic));
    }
  }
}
