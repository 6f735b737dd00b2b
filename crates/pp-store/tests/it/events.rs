//! Events: one global, strictly increasing sequence across tasks.

use pp_store::Error;
use pp_types::{EventKind, StoredEvent};
use pretty_assertions::assert_eq;

use crate::{TestDb, event, started};

fn model_request(step: u32) -> pp_types::Event {
    event(
        step,
        EventKind::ModelRequest {
            message_count: 2,
            tool_count: 5,
        },
    )
}

both!(an_empty_log_has_last_seq_zero);
async fn an_empty_log_has_last_seq_zero(db: TestDb) {
    assert_eq!(db.store.last_seq().await.unwrap(), 0);
    assert!(db.store.events_after(0, 100).await.unwrap().is_empty());
}

both!(seq_increases_strictly_across_tasks_and_reads_back_equal);
async fn seq_increases_strictly_across_tasks_and_reads_back_equal(db: TestDb) {
    let a = db.create("a").await;
    let b = db.create("b").await;
    let mut appended: Vec<StoredEvent> = Vec::new();
    for step in 0..3 {
        appended.extend(
            db.store
                .append_events(&a.id, &[model_request(step)])
                .await
                .unwrap(),
        );
        appended.extend(
            db.store
                .append_events(&b.id, &[model_request(step), started("b")])
                .await
                .unwrap(),
        );
    }
    assert_eq!(appended.len(), 9);
    assert!(appended.windows(2).all(|pair| pair[0].seq < pair[1].seq));
    assert_eq!(db.store.last_seq().await.unwrap(), appended[8].seq);

    // The global stream returns exactly what was appended, in order.
    assert_eq!(db.store.events_after(0, 100).await.unwrap(), appended);
    // Per task, with a Last-Event-ID taken from the global stream.
    let of_a: Vec<_> = appended
        .iter()
        .filter(|e| e.task_id == a.id)
        .cloned()
        .collect();
    assert_eq!(db.store.task_events(&a.id, 0).await.unwrap(), of_a);
    let after = appended[3].seq;
    let of_b_after: Vec<_> = appended
        .iter()
        .filter(|e| e.task_id == b.id && e.seq > after)
        .cloned()
        .collect();
    assert_eq!(
        db.store.task_events(&b.id, after).await.unwrap(),
        of_b_after
    );
    // Paging the global stream.
    let page = db.store.events_after(appended[1].seq, 3).await.unwrap();
    assert_eq!(page, appended[2..5]);
    // "No limit" is a limit too (usize::MAX: the whole stream, on every backend).
    assert_eq!(
        db.store.events_after(0, usize::MAX).await.unwrap(),
        appended
    );
    assert!(
        db.store
            .events_after(appended[8].seq, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

both!(appending_nothing_is_a_no_op);
async fn appending_nothing_is_a_no_op(db: TestDb) {
    let task = db.create("a").await;
    assert!(
        db.store
            .append_events(&task.id, &[])
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(db.store.last_seq().await.unwrap(), 0);
}

both!(appending_to_an_unknown_task_is_not_found);
async fn appending_to_an_unknown_task_is_not_found(db: TestDb) {
    let error = db
        .store
        .append_events(&"t_ghost".into(), &[started("x")])
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotFound { what: "task", .. }));
}

both!(seq_stays_unique_across_processes);
async fn seq_stays_unique_across_processes(db: TestDb) {
    let task = db.create("a").await;
    let per_thread = 50;
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let store = db.open_again().await;
        let id = task.id.clone();
        writers.spawn(async move {
            for step in 0..per_thread {
                store
                    .append_events(&id, &[model_request(step)])
                    .await
                    .unwrap();
            }
        });
    }
    writers.join_all().await;
    let all = db.store.task_events(&task.id, 0).await.unwrap();
    assert_eq!(all.len(), 4 * per_thread as usize);
    assert!(all.windows(2).all(|pair| pair[0].seq < pair[1].seq));
}

both!(task_events_come_in_pages_of_at_most_limit);
async fn task_events_come_in_pages_of_at_most_limit(db: TestDb) {
    let a = db.create("a").await;
    let b = db.create("b").await;
    for step in 0..7 {
        db.store
            .append_events(&a.id, &[model_request(step)])
            .await
            .unwrap();
        db.store
            .append_events(&b.id, &[model_request(step)])
            .await
            .unwrap();
    }
    let all = db.store.task_events(&a.id, 0).await.unwrap();
    assert_eq!(all.len(), 7);
    let mut paged = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let page = db.store.task_events_page(&a.id, after, 3).await.unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 3);
        assert!(page.iter().all(|stored| stored.task_id == a.id));
        after = page.last().unwrap().seq;
        paged.extend(page);
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(paged, all);
    assert!(
        db.store
            .task_events_page(&a.id, 0, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        db.store
            .task_events_page(&a.id, all[5].seq, 100)
            .await
            .unwrap(),
        all[6..]
    );
    assert!(
        db.store
            .task_events_page(&"t_missing".into(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}
