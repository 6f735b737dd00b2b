//! The SQLite backend's calls, queued and run in batches (group commit).
//!
//! Every call of a [`crate::Store`] on SQLite is a closure over the one connection. They
//! wait here, in order, and one runner at a time (a blocking-pool thread, started by the
//! call that finds none running) takes every call waiting, up to [`MOST_IN_BATCH`], and
//! runs them one after the other inside one `BEGIN IMMEDIATE` transaction: each call's
//! writes in a savepoint of its own (a call that fails undoes only its own writes), then
//! one commit for them all. Under load that is one WAL append and one wake-up for many
//! calls instead of one each, and the pages they share (the events table's last page,
//! its indexes) are written once.
//!
//! No caller ever sees what is not committed: a call's answer is held until its batch
//! has committed and then handed over, and if the commit fails every call of the batch
//! gets the error (its writes are gone with the batch). A call alone in the queue runs as
//! before, in its own transaction. The runner keeps going until the queue is empty, so a
//! call never waits for a thread that is not coming; a tool on the blocking pool that
//! waits for a store call (team memory, shared skills) only waits for the runner, which
//! waits for nothing but the database.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::sqlite::SqliteStore;

/// Most calls in one batch: enough to gather a loaded server's calls, few enough that the
/// first of them is not kept waiting long for the commit.
const MOST_IN_BATCH: usize = 64;

/// What a call's answer needs once its batch has ended: the commit's error, if any.
type Deliver = Box<dyn FnOnce(Option<&Error>) + Send>;

/// One queued call: runs against the store and returns how to deliver its answer.
type Run = Box<dyn FnOnce(&SqliteStore) -> Deliver + Send>;

/// A queued call, and whether it must run outside any batch.
struct Job {
    run: Run,
    /// A long call that needs no transaction of ours (a backup, on a connection of its
    /// own): in a batch it would hold the write lock, and keep other processes' writes
    /// waiting, for as long as it takes.
    alone: bool,
}

/// The SQLite store and the calls waiting for it.
#[derive(Debug)]
pub(crate) struct Queue {
    store: Arc<SqliteStore>,
    state: Mutex<State>,
}

/// The waiting calls, and whether a runner is taking them.
#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    running: bool,
}

impl std::fmt::Debug for State {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("State")
            .field("jobs", &self.jobs.len())
            .field("running", &self.running)
            .finish()
    }
}

impl Queue {
    /// A queue in front of `store`.
    pub(crate) fn new(store: Arc<SqliteStore>) -> Self {
        Self {
            store,
            state: Mutex::new(State::default()),
        }
    }

    /// The store (for the calls that need nothing of the queue: its path).
    pub(crate) fn store(&self) -> &SqliteStore {
        &self.store
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock (jobs run outside it).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `call` and waits for its answer, which comes once the batch it ran in has
    /// committed. A caller that gives up does not take its call back: once queued, it
    /// runs.
    pub(crate) async fn call<T, F>(self: &Arc<Self>, call: F) -> Result<T>
    where
        F: FnOnce(&SqliteStore) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.queue(call, false).await
    }

    /// Like [`Queue::call`], for a call that runs outside any batch (see [`Job::alone`]).
    pub(crate) async fn call_alone<T, F>(self: &Arc<Self>, call: F) -> Result<T>
    where
        F: FnOnce(&SqliteStore) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.queue(call, true).await
    }

    /// Queues `call` (alone: outside any batch) and waits for its answer.
    async fn queue<T, F>(self: &Arc<Self>, call: F, alone: bool) -> Result<T>
    where
        F: FnOnce(&SqliteStore) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let run: Run = Box::new(move |store: &SqliteStore| -> Deliver {
            let value = catch_unwind(AssertUnwindSafe(|| call(store)))
                .unwrap_or_else(|panic| Err(Error::Worker(panic_message(panic.as_ref()))));
            Box::new(move |failed: Option<&Error>| {
                let value = match failed {
                    Some(error) => Err(batch_error(error)),
                    None => value,
                };
                let _ = answer.send(value);
            })
        });
        self.push(Job { run, alone });
        answered
            .await
            .map_err(|_| Error::Worker("the store's queue dropped the call".to_owned()))?
    }

    /// Queues `job`, starting a runner if none is running.
    fn push(self: &Arc<Self>, job: Job) {
        let start = {
            let mut state = self.state();
            state.jobs.push_back(job);
            !std::mem::replace(&mut state.running, true)
        };
        if start {
            let runner = Runner {
                queue: Arc::clone(self),
                armed: true,
            };
            tokio::task::spawn_blocking(move || runner.drain());
        }
    }

    /// Runs `jobs`: alone in its own transaction if it is the only one, otherwise as one
    /// batch; then delivers every answer.
    fn run(&self, jobs: Vec<Job>) {
        let store = &*self.store;
        if jobs.len() == 1 || store.begin_batch().is_err() {
            // One call (or the batch could not start: each call tries on its own).
            for job in jobs {
                (job.run)(store)(None);
            }
            return;
        }
        let mut delivers = Vec::with_capacity(jobs.len());
        let mut jobs = jobs.into_iter();
        let mut broken = false;
        for job in jobs.by_ref() {
            delivers.push((job.run)(store));
            if !store.in_batch() {
                // SQLite rolled the batch back (disk full, I/O error): what ran so far is
                // gone; the calls still queued run on their own below.
                broken = true;
                break;
            }
        }
        let ended = store.end_batch(!broken);
        let failed = ended.err();
        for deliver in delivers {
            deliver(failed.as_ref());
        }
        for job in jobs {
            (job.run)(store)(None);
        }
    }
}

/// The one runner of a queue: takes its calls until there are none. If it is dropped
/// without running (a runtime shutting down), the queue is marked idle so the next call
/// starts another.
struct Runner {
    queue: Arc<Queue>,
    /// Whether dropping it must mark the queue idle (it has not done so itself).
    armed: bool,
}

impl Runner {
    fn drain(mut self) {
        loop {
            let jobs: Vec<Job> = {
                let mut state = self.queue.state();
                if state.jobs.is_empty() {
                    state.running = false;
                    self.armed = false;
                    return;
                }
                // A call that must run alone is taken by itself, and ends the batch
                // before it.
                let take = match state.jobs.iter().position(|job| job.alone) {
                    Some(0) => 1,
                    Some(alone) => alone,
                    None => state.jobs.len(),
                };
                state.jobs.drain(..take.min(MOST_IN_BATCH)).collect()
            };
            self.queue.run(jobs);
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if self.armed {
            self.queue.state().running = false;
        }
    }
}

/// The error a call of a failed batch gets: the commit's, as this call's.
fn batch_error(error: &Error) -> Error {
    match error {
        Error::Sqlite(source) => Error::Sqlite(Box::new(match source.as_ref() {
            rusqlite::Error::SqliteFailure(code, message) => {
                rusqlite::Error::SqliteFailure(*code, message.clone())
            }
            other => rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(other.to_string()),
            ),
        })),
        other => Error::Worker(format!(
            "the batch this call ran in did not commit: {other}"
        )),
    }
}

/// What a panic said, if it said it as text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let said = panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    format!("the call panicked: {said}")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use rusqlite::Connection;

    use super::*;

    /// A queue on a fresh database with a scratch table `t(x)`.
    fn queue() -> (tempfile::TempDir, Arc<Queue>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pp.db");
        let store = SqliteStore::open(&path).unwrap();
        store
            .write(|connection| Ok(connection.execute_batch("CREATE TABLE t (x INTEGER)")?))
            .unwrap();
        (dir, Arc::new(Queue::new(Arc::new(store))))
    }

    fn insert(x: i64) -> impl FnOnce(&SqliteStore) -> Result<()> + Send + 'static {
        move |store| {
            store.write(|connection| {
                connection.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
                Ok(())
            })
        }
    }

    /// The rows of `t`, read by a connection of its own (another process's view).
    fn committed(dir: &tempfile::TempDir) -> Vec<i64> {
        let connection = Connection::open(dir.path().join("pp.db")).unwrap();
        let mut statement = connection.prepare("SELECT x FROM t ORDER BY x").unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .map(|x| x.unwrap())
            .collect()
    }

    /// Queues `call` from a task of its own.
    fn spawn<T, F>(queue: &Arc<Queue>, call: F) -> tokio::task::JoinHandle<Result<T>>
    where
        F: FnOnce(&SqliteStore) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let queue = Arc::clone(queue);
        tokio::spawn(async move { queue.call(call).await })
    }

    /// Holds the runner for `millis`, so the calls queued meanwhile make one batch.
    fn hold(millis: u64) -> impl FnOnce(&SqliteStore) -> Result<()> + Send + 'static {
        move |_| {
            std::thread::sleep(Duration::from_millis(millis));
            Ok(())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_call_at_a_time_and_a_caller_that_gives_up_still_has_its_call_run() {
        let (dir, queue) = queue();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let call = |x: i64| {
            let (queue, running, most) =
                (Arc::clone(&queue), Arc::clone(&running), Arc::clone(&most));
            async move {
                queue
                    .call(move |store| {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(5));
                        running.fetch_sub(1, Ordering::SeqCst);
                        insert(x)(store)
                    })
                    .await
            }
        };
        for x in 0..4 {
            let _ = tokio::time::timeout(Duration::from_millis(1), call(x)).await;
        }
        let calls: Vec<_> = (4..20).map(|x| tokio::spawn(call(x))).collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        // The given-up calls were queued before the others: they have run by now.
        assert_eq!(committed(&dir), (0..20).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_commits_once_a_failed_call_undoes_only_its_own_writes_and_no_answer_comes_early()
     {
        let (dir, queue) = queue();
        let held = spawn(&queue, hold(200));
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Queued while the runner is held: one batch.
        let one = tokio::spawn({
            let queue = Arc::clone(&queue);
            async move {
                queue.call(insert(1)).await.unwrap();
                // The answer comes after the commit: another connection sees the row.
                let seen = tokio::task::spawn_blocking({
                    let path = queue.store().path().to_owned();
                    move || {
                        let connection = Connection::open(path).unwrap();
                        connection
                            .query_row("SELECT count(*) FROM t WHERE x = 1", [], |row| {
                                row.get::<_, i64>(0)
                            })
                            .unwrap()
                    }
                });
                seen.await.unwrap()
            }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let failing = spawn(&queue, |store| {
            store.write(|connection| {
                connection.execute("INSERT INTO t (x) VALUES (2)", [])?;
                Err::<(), _>(Error::Worker("refused after writing".to_owned()))
            })
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let path = queue.store().path().to_owned();
        let outside = spawn(&queue, move |store| {
            // Inside the batch: its own view has row 1 and not row 2;
            // another connection sees nothing of the batch yet.
            let inside: i64 = store.read(|connection| {
                Ok(connection.query_row("SELECT count(*) FROM t", [], |row| row.get(0))?)
            })?;
            let connection = Connection::open(&path).unwrap();
            let outside: i64 =
                connection.query_row("SELECT count(*) FROM t", [], |row| row.get(0))?;
            Ok((inside, outside))
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let three = spawn(&queue, insert(3));
        held.await.unwrap().unwrap();
        assert_eq!(
            one.await.unwrap(),
            1,
            "row 1 is committed when its answer arrives"
        );
        let error = failing.await.unwrap().unwrap_err();
        assert!(
            error.to_string().contains("refused after writing"),
            "{error}"
        );
        assert_eq!(outside.await.unwrap().unwrap(), (1, 0));
        three.await.unwrap().unwrap();
        assert_eq!(committed(&dir), vec![1, 3]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn when_sqlite_rolls_a_batch_back_its_calls_so_far_fail_and_the_rest_run_alone() {
        let (dir, queue) = queue();
        let held = spawn(&queue, hold(200));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut calls = Vec::new();
        for x in [1, 2] {
            calls.push(spawn(&queue, insert(x)));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // What SQLite does by itself on a full disk or an I/O error: the whole
        // transaction is gone.
        let rollback = spawn(&queue, |store| {
            store.read(|connection| Ok(connection.execute_batch("ROLLBACK")?))
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let after = spawn(&queue, insert(4));
        held.await.unwrap().unwrap();
        for call in calls {
            let error = call.await.unwrap().unwrap_err();
            assert!(matches!(error, Error::Sqlite(_)), "{error:?}");
        }
        assert!(
            rollback.await.unwrap().is_err(),
            "the call that ran when it broke fails too"
        );
        after.await.unwrap().unwrap();
        assert_eq!(
            committed(&dir),
            vec![4],
            "no call reported failed has its writes kept"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_call_fails_alone_and_the_queue_goes_on() {
        let (dir, queue) = queue();
        let held = spawn(&queue, hold(100));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let panics = spawn(&queue, |store| {
            store.write(|connection| {
                connection.execute("INSERT INTO t (x) VALUES (9)", [])?;
                panic!("boom");
            })
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let fine = spawn(&queue, insert(5));
        held.await.unwrap().unwrap();
        let error: Result<()> = panics.await.unwrap();
        assert!(error.unwrap_err().to_string().contains("boom"));
        fine.await.unwrap().unwrap();
        queue.call(insert(6)).await.unwrap();
        assert_eq!(committed(&dir), vec![5, 6]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_that_must_run_alone_ends_the_batch_before_it_and_runs_outside_any() {
        let (dir, queue) = queue();
        let held = spawn(&queue, hold(150));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut batched = Vec::new();
        for x in [1, 2] {
            let queue = Arc::clone(&queue);
            batched.push(tokio::spawn(async move {
                queue
                    .call(move |store| {
                        insert(x)(store)?;
                        Ok(store.in_batch())
                    })
                    .await
            }));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let alone = tokio::spawn({
            let queue = Arc::clone(&queue);
            async move { queue.call_alone(|store| Ok(store.in_batch())).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let last = spawn(&queue, |store| Ok(store.in_batch()));
        held.await.unwrap().unwrap();
        for call in batched {
            assert!(
                call.await.unwrap().unwrap(),
                "the two calls before it ran as one batch"
            );
        }
        assert!(
            !alone.await.unwrap().unwrap(),
            "it ran outside any transaction of ours"
        );
        assert!(
            !last.await.unwrap().unwrap(),
            "the call after it, alone in its batch, ran in its own"
        );
        assert_eq!(committed(&dir), vec![1, 2]);
    }
}
